/* plan_cluster: Cluster mode's Redis side of a plan. See plan_cluster.h and
 * docs/cluster-mode.md. */
#include "plan_cluster.h"

#include "cluster_observe.h"
#include "jsonx.h"
#include "plan_build.h"
#include "render.h"

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
};
#define NKINDS (sizeof(kind_event) / sizeof(kind_event[0]))

/* The commands as PLAN_REDIS actions, as many as the plan has room for, and one Event a
 * kind on its last command naming the pods. Returns how many did not fit (the next
 * reconcile's), or -1 when out of memory. */
static int plan_commands(const plan_ctx_t *c, const ctopo_input_t *in, const ctopo_result_t *r)
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
    json_object *body = jsonx_new_obj(oom), *pre = jsonx_new_obj(oom);
    jsonx_put(body, "apiVersion", jsonx_new_str("v1", oom), oom);
    jsonx_put(body, "kind", jsonx_new_str("DeleteOptions", oom), oom);
    jsonx_put(pre, "uid", jsonx_new_str(uid, oom), oom);
    jsonx_put(body, "preconditions", pre, oom);
    if (*oom) {
        json_object_put(body);
        return -1;
    }
    char why[600];
    snprintf(why, sizeof(why), "pod %s/%s runs an old revision; every other pod is settled: restart it", c->ns,
             pod->pod);
    int i = plan_add_action(c->plan, PLAN_DELETE, "v1", "pods", c->ns, pod->pod, body, why);
    plan_add_event(c->plan, "Normal", "RolledPod", i, "%s", why);
    return *oom ? -1 : 0;
}

/* The decisions' actions: commands, labels, the rollout's deletion; Degraded findings
 * and the requeue. Returns 0, or -1 when out of memory. */
static int plan_decisions(const plan_ctx_t *c, const ctopo_input_t *in, const ctopo_result_t *r)
{
    plan_t *p = c->plan;
    int left = plan_commands(c, in, r);
    if (left < 0)
        return -1;
    int n = c->spec->cluster.shards * (1 + c->spec->cluster.replicas_per_shard);
    for (int i = 0; i < n; i++)
        if (r->label[i] && plan_room(p) > ROOM_KEPT && plan_label(c, &in->pod[i], r->label[i]))
            return -1;
    if (r->delete_pod >= 0 && !r->ncmds && plan_room(p) > ROOM_KEPT && plan_delete_pod(c, &in->pod[r->delete_pod]))
        return -1;
    if (r->degraded)
        plan_degrade(c, r->reason, "%s", r->message);
    if (r->waiting || left)
        plan_requeue_within(p, PLAN_REQUEUE_SWITCHOVER_NS);
    return 0;
}

int plan_cluster(const plan_ctx_t *c, const plan_kids_t *kids, plan_cluster_t *out)
{
    memset(out, 0, sizeof(*out));
    out->view = shards_view(c, kids);
    if (!out->view.present)
        return 0;
    out->in = calloc(1, sizeof(*out->in));
    out->r = calloc(1, sizeof(*out->r));
    if (!out->in || !out->r) {
        plan_cluster_free(out);
        return -1;
    }
    const plan_observed_t *m = c->more;
    const json_object *sets[CTOPO_MAX_SHARDS];
    int shards = c->spec->cluster.shards, replicas = c->spec->cluster.replicas_per_shard;
    for (int k = 0; k < shards; k++)
        sets[k] = plan_shard_object(c, m ? m->shard_statefulsets : NULL, k);
    cn_view_t *views[CTOPO_MAX_PODS];
    int bootstrapped = jsonx_true(JSONX_AT(c->rc, "status", "cluster"), "bootstrapped");
    if (cluster_observe(c->name, shards, replicas, bootstrapped, m ? m->members : NULL, m ? m->redis : NULL, sets,
                        (size_t)shards, out->in, views)) {
        plan_cluster_free(out);
        return 0; /* not a layout (the spec was validated): no decision */
    }
    int rc = ctopo_compute(out->in, out->r) ? 0 : plan_decisions(c, out->in, out->r);
    for (int i = 0; i < shards * (1 + replicas); i++)
        cn_view_destroy(&views[i]);
    /* the views are gone: nothing after this reads in->pod[].view */
    for (int i = 0; i < shards * (1 + replicas); i++)
        out->in->pod[i].view = NULL;
    return rc;
}

void plan_cluster_free(plan_cluster_t *x)
{
    free(x->in);
    free(x->r);
    x->in = NULL;
    x->r = NULL;
}
