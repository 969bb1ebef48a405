/* cluster_observe: Cluster mode's input from a work item. See cluster_observe.h. */
#include "cluster_observe.h"

#include "jsonx.h"
#include "render.h"

#include <stdio.h>
#include <string.h>

/* The element of array a whose metadata.name (meta 1) or pod (meta 0) is name, or NULL. */
static const json_object *named(const json_object *a, const char *name, int meta)
{
    size_t n = a && json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
    for (size_t i = 0; i < n; i++) {
        const json_object *o = json_object_array_get_idx(a, i);
        const char *v = meta ? JSONX_STR_AT(o, "metadata", "name") : JSONX_STR_AT(o, "pod");
        if (v && !strcmp(v, name))
            return o;
    }
    return NULL;
}

static int pod_ready(const json_object *pod)
{
    const json_object *conds = jsonx_get(jsonx_get(pod, "status"), "conditions");
    size_t n = conds && json_object_is_type(conds, json_type_array) ? json_object_array_length(conds) : 0;
    for (size_t i = 0; i < n; i++) {
        const json_object *c = json_object_array_get_idx(conds, i);
        const char *t = JSONX_STR_AT(c, "type"), *st = JSONX_STR_AT(c, "status");
        if (t && !strcmp(t, "Ready"))
            return st && !strcmp(st, "True");
    }
    return 0;
}

static int64_t int_or(const json_object *o, const char *key, int64_t dflt)
{
    const json_object *v = jsonx_get(o, key);
    return v && json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : dflt;
}

static int bool_of(const json_object *o, const char *key)
{
    const json_object *v = jsonx_get(o, key);
    return v && json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
}

/* The pod's part: presence, readiness, IP, deletion, label, revision. */
static void from_pod(ctopo_pod_t *p, const json_object *pod, const json_object *sts)
{
    const json_object *meta = jsonx_get(pod, "metadata");
    const char *ip = JSONX_STR_AT(pod, "status", "podIP");
    p->present = pod != NULL;
    p->ready = pod && pod_ready(pod);
    p->terminating = jsonx_get(meta, "deletionTimestamp") != NULL;
    snprintf(p->ip, sizeof(p->ip), "%s", ip ? ip : "");
    p->label = JSONX_STR_AT(meta, "labels", RENDER_LABEL_ROLE);
    const char *have = JSONX_STR_AT(meta, "labels", "controller-revision-hash");
    const char *want = JSONX_STR_AT(sts, "status", "updateRevision");
    p->outdated = pod && want && *want && have && strcmp(have, want);
}

/* The observation's part: the node of the pod, when reachable at the pod's IP. */
static void from_node(ctopo_pod_t *p, const json_object *node, cn_view_t **view)
{
    const char *ip = JSONX_STR_AT(node, "ip");
    const json_object *cl = jsonx_get(node, "cluster");
    const char *text = JSONX_STR_AT(cl, "nodes");
    char err[256];
    p->offset = int_or(node, "offset", -1);
    p->link_up = bool_of(node, "linkUp");
    if (!node || !bool_of(node, "reachable") || !ip || strcmp(ip, p->ip) || !text || jsonx_get(cl, "error") ||
        cn_parse(text, strlen(text), view, err, sizeof(err)))
        return;
    p->view = *view;
    p->observed = 1;
    const char *state = JSONX_STR_AT(cl, "state");
    p->info.state_ok = !state ? -1 : !strcmp(state, "ok");
    p->info.slots_assigned = (int)int_or(cl, "slotsAssigned", -1);
    p->info.slots_ok = (int)int_or(cl, "slotsOk", -1);
    p->info.slots_pfail = (int)int_or(cl, "slotsPfail", -1);
    p->info.slots_fail = (int)int_or(cl, "slotsFail", -1);
    p->info.known_nodes = (int)int_or(cl, "knownNodes", -1);
    p->info.current_epoch = int_or(cl, "currentEpoch", -1);
}

/* The shard StatefulSet of sts named shard, or NULL. */
static const json_object *set_named(const json_object *const *sts, size_t nsts, const char *shard)
{
    for (size_t s = 0; s < nsts; s++) {
        const char *sn = JSONX_STR_AT(sts[s], "metadata", "name");
        if (sn && !strcmp(sn, shard))
            return sts[s];
    }
    return NULL;
}

/* The layout (cluster_topo.h LAYOUT): the spec's, widened by the shard StatefulSets and
 * pods still there (the spec shrank). Returns 0, or -1 when a name does not fit. */
static int layout(const char *name, ctopo_input_t *in, const json_object *pods, const json_object *const *sts,
                  size_t nsts)
{
    in->nshards = in->shards;
    in->width = 1 + in->replicas;
    for (int k = 0; k < CTOPO_MAX_SHARDS; k++) {
        char shard[300], pod[320];
        if (render_shard_name(name, k, shard, sizeof(shard)))
            return -1;
        const json_object *set = set_named(sts, nsts, shard);
        int64_t want = int_or(jsonx_get(set, "spec"), "replicas", 0);
        in->sts_replicas[k] = want > 0 && want <= 1 + CTOPO_MAX_REPLICAS ? (int)want : 0;
        int highest = in->sts_replicas[k];
        for (int j = 0; j < 1 + CTOPO_MAX_REPLICAS; j++) {
            snprintf(pod, sizeof(pod), "%s-%d", shard, j);
            if (named(pods, pod, 1) && j + 1 > highest)
                highest = j + 1;
        }
        if (set || highest) {
            if (k + 1 > in->nshards)
                in->nshards = k + 1;
            if (highest > in->width)
                in->width = highest;
        }
    }
    return 0;
}

int cluster_observe(const char *name, int shards, int replicas, int bootstrapped, const json_object *pods,
                    const json_object *observation, const json_object *const *sts, size_t nsts, ctopo_input_t *in,
                    cn_view_t **views)
{
    memset(in, 0, sizeof(*in));
    if (shards < 3 || shards > CTOPO_MAX_SHARDS || replicas < 0 || replicas > CTOPO_MAX_REPLICAS)
        return -1;
    in->shards = shards;
    in->replicas = replicas;
    in->bootstrapped = bootstrapped;
    if (layout(name, in, pods, sts, nsts))
        return -1;
    const json_object *nodes = jsonx_get(observation, "nodes");
    int n = in->nshards * in->width;
    for (int i = 0; i < n; i++) {
        ctopo_pod_t *p = &in->pod[i];
        int k = i / in->width, j = i % in->width;
        char shard[300];
        views[i] = NULL;
        if (render_shard_name(name, k, shard, sizeof(shard)) ||
            (size_t)snprintf(p->pod, sizeof(p->pod), "%s-%d", shard, j) >= sizeof(p->pod)) {
            for (int m = 0; m < i; m++)
                cn_view_destroy(&views[m]);
            memset(in, 0, sizeof(*in));
            return -1;
        }
        from_pod(p, named(pods, p->pod, 1), set_named(sts, nsts, shard));
        from_node(p, named(nodes, p->pod, 0), &views[i]);
    }
    return 0;
}
