/* topology: pure replication decisions. See topology.h. */
#include "topology.h"

#include "jsonx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* o[key] as a string, or NULL. */
static const char *sget(const json_object *o, const char *key)
{
    const char *s;
    return jsonx_string(o, key, &s) == JSONX_OK ? s : NULL;
}

static int64_t iget(const json_object *o, const char *key, int64_t dflt)
{
    const json_object *v = jsonx_get(o, key);
    return v && json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : dflt;
}

static int bget(const json_object *o, const char *key)
{
    const json_object *v = jsonx_get(o, key);
    return v && json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
}

static size_t arr_len(const json_object *a)
{
    return a && json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

/* The ordinal of pod <name>-<N> with N < size, or -1 when pod is not one of those. */
static int ordinal_of(const char *name, int size, const char *pod)
{
    size_t nl = strlen(name);
    if (!pod || strncmp(pod, name, nl) || pod[nl] != '-' || !pod[nl + 1])
        return -1;
    char *end = NULL;
    long v = strtol(pod + nl + 1, &end, 10);
    if (*end || v < 0 || v >= size || (pod[nl + 1] == '0' && pod[nl + 2]))
        return -1;
    return (int)v;
}

/* The observation node of pod, or NULL. */
static const json_object *obs_node(const json_object *observation, const char *pod)
{
    const json_object *nodes = jsonx_get(observation, "nodes");
    for (size_t i = 0; i < arr_len(nodes); i++) {
        const json_object *n = json_object_array_get_idx(nodes, i);
        const char *p = sget(n, "pod");
        if (p && !strcmp(p, pod))
            return n;
    }
    return NULL;
}

typedef struct {
    const json_object *pod;
    const json_object *obs; /* NULL: not observed (or observed at another IP) */
    const char *name, *ip, *label;
    int reachable;
    const char *role; /* "master", "slave", "" */
} member_t;

static void add_msg(topo_t *t, const char *reason, const char *fmt, const char *a, const char *b)
{
    if (t->reason)
        return;
    t->reason = reason;
    snprintf(t->message, sizeof(t->message), fmt, a, b);
}

void topo_compute(const char *name, int size, const char *status_primary, const json_object *pods,
                  const json_object *observation, topo_t *out)
{
    memset(out, 0, sizeof(*out));
    member_t m[TOPO_MAX_NODES];
    memset(m, 0, sizeof(m));
    /* Pods by ordinal. */
    for (size_t i = 0; i < arr_len(pods); i++) {
        const json_object *p = json_object_array_get_idx(pods, i);
        const char *pn = JSONX_STR_AT(p, "metadata", "name");
        int ord = ordinal_of(name, size, pn);
        if (ord < 0 || ord >= TOPO_MAX_NODES || jsonx_get(jsonx_get(p, "metadata"), "deletionTimestamp"))
            continue;
        m[ord].pod = p;
        m[ord].name = pn;
        m[ord].ip = JSONX_STR_AT(p, "status", "podIP");
        m[ord].label = JSONX_STR_AT(p, "metadata", "labels", TOPO_ROLE_LABEL);
    }
    int pord = ordinal_of(name, size, status_primary);
    if (pord < 0)
        pord = 0;
    snprintf(out->primary, sizeof(out->primary), "%s-%d", name, pord);

    const json_object *obs = observation && json_object_is_type(observation, json_type_object) ? observation : NULL;
    for (int i = 0; i < size && i < TOPO_MAX_NODES; i++) {
        if (!m[i].pod)
            continue;
        const json_object *n = obs ? obs_node(obs, m[i].name) : NULL;
        const char *oip = sget(n, "ip");
        /* An observation of another IP is of a pod that is gone. */
        if (n && m[i].ip && oip && !strcmp(oip, m[i].ip)) {
            m[i].obs = n;
            m[i].reachable = bget(n, "reachable");
            const char *r = sget(n, "role");
            m[i].role = r ? r : "";
        } else {
            m[i].role = "";
        }
        /* Labels follow the designation, so the -primary Service never selects a pod
         * that only claims to be a primary (a restarted replica comes up as one). */
        const char *want = i == pord ? "primary" : "replica";
        if (!m[i].label || strcmp(m[i].label, want)) {
            topo_label_t *l = &out->labels[out->n_labels++];
            snprintf(l->pod, sizeof(l->pod), "%s", m[i].name);
            l->role = want;
            l->have = m[i].label ? m[i].label : "";
        }
    }

    const member_t *P = &m[pord];
    int primary_ok = P->pod && P->obs && P->reachable && !strcmp(P->role, "master") && P->ip && *P->ip;
    int64_t poffset = primary_ok ? iget(P->obs, "offset", -1) : -1;
    int linked = 0;
    char unreachable[512] = "", linkdown[512] = "";
    for (int i = 0; i < size && i < TOPO_MAX_NODES; i++) {
        const member_t *x = &m[i];
        if (!x->pod)
            continue;
        topo_node_t *nd = &out->nodes[out->n_nodes++];
        snprintf(nd->pod, sizeof(nd->pod), "%s", x->name);
        snprintf(nd->ip, sizeof(nd->ip), "%s", x->ip ? x->ip : "");
        nd->offset = x->obs && x->reachable ? iget(x->obs, "offset", -1) : -1;
        nd->lag_bytes = -1;
        nd->role = !x->reachable ? "unknown" : !strcmp(x->role, "master") ? "primary"
                                             : !strcmp(x->role, "slave")  ? "replica"
                                                                          : "unknown";
        int is_master = x->reachable && !strcmp(x->role, "master");
        nd->link_up = is_master || (x->obs && bget(x->obs, "linkUp"));
        if (i == pord) {
            nd->lag_bytes = primary_ok ? 0 : -1;
            continue;
        }
        if (!x->reachable) {
            size_t l = strlen(unreachable);
            snprintf(unreachable + l, sizeof(unreachable) - l, "%s%s", l ? ", " : "", x->name);
            continue;
        }
        const char *mh = sget(x->obs, "masterHost");
        int64_t mp = iget(x->obs, "masterPort", 0);
        int follows = !strcmp(x->role, "slave") && mh && P->ip && !strcmp(mh, P->ip) && mp == TOPO_REDIS_PORT;
        if (follows && nd->offset >= 0 && poffset >= 0)
            nd->lag_bytes = poffset > nd->offset ? poffset - nd->offset : 0;
        if (!primary_ok || !*x->role || follows) {
            if (follows && nd->link_up)
                linked++;
            else if (follows) {
                size_t l = strlen(linkdown);
                snprintf(linkdown + l, sizeof(linkdown) - l, "%s%s", l ? ", " : "", x->name);
            }
            continue;
        }
        topo_cmd_t *c = &out->cmds[out->n_cmds++];
        snprintf(c->pod, sizeof(c->pod), "%s", x->name);
        snprintf(c->ip, sizeof(c->ip), "%s", x->ip);
        snprintf(c->primary_ip, sizeof(c->primary_ip), "%s", P->ip);
        if (is_master)
            snprintf(c->why, sizeof(c->why), "%s is a primary too (two primaries): demoted to a replica of %s (%s:%d)",
                     x->name, P->name, P->ip, TOPO_REDIS_PORT);
        else
            snprintf(c->why, sizeof(c->why), "%s follows %s:%lld, not the primary %s (%s:%d): repointed", x->name,
                     mh && *mh ? mh : "(none)", (long long)mp, P->name, P->ip, TOPO_REDIS_PORT);
    }

    char count[32];
    snprintf(count, sizeof(count), "%d/%d", linked, size - 1);
    if (!obs)
        add_msg(out, "NotObserved", "no observation of the Redis nodes yet%s%s", "", "");
    else if (!P->pod || !P->obs || !P->reachable)
        add_msg(out, "PrimaryUnreachable", "the primary %s is not reachable%s; no replica is promoted here",
                out->primary, "");
    else if (!primary_ok)
        add_msg(out, "NoPrimary", "the designated primary %s does not report role master (%s); no primary is elected here",
                out->primary, *P->role ? P->role : "unknown role");
    else if (out->n_cmds)
        add_msg(out, "Repointing", "%s replicas linked; repointing the others to %s", count, out->primary);
    else if (*unreachable)
        add_msg(out, "NodeUnreachable", "not reachable: %s (%s replicas linked)", unreachable, count);
    else if (*linkdown)
        add_msg(out, "ReplicaLinkDown", "link to the primary down: %s (%s replicas linked)", linkdown, count);
    else if (linked < size - 1)
        add_msg(out, "ReplicasMissing", "%s replicas linked to %s", count, out->primary);
    if (!out->reason) {
        out->healthy = 1;
        out->reason = "AllReplicasLinked";
        snprintf(out->message, sizeof(out->message), "%s replicas linked to %s", count, out->primary);
    }
}
