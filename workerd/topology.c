/* topology: pure replication decisions. See topology.h. */
#include "topology.h"

#include "jsonx.h"

#include <stdarg.h>
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

/* 1 when replica x was linked to its primary recently (FAILOVER in topology.h): link up,
 * or down for at most window_ms (observerd's linkDownSinceMs; absent = unknown = no). */
static int linked_recently(const member_t *x, int64_t window_ms)
{
    if (bget(x->obs, "linkUp"))
        return 1;
    int64_t d = iget(x->obs, "linkDownSinceMs", -1);
    return d >= 0 && d <= window_ms;
}

/* The index of the reachable master of the set at ip, or -1. */
static int master_at(const member_t *m, int n, const char *ip)
{
    for (int i = 0; ip && *ip && i < n; i++)
        if (m[i].pod && m[i].obs && m[i].reachable && !strcmp(m[i].role, "master") && m[i].ip && !strcmp(m[i].ip, ip))
            return i;
    return -1;
}

/* FAILOVER (topology.h): decide whether an election is held and who wins. Returns the
 * winner's ordinal, pord itself when there is nothing to change, or -1 when an election
 * found no candidate (out->elect_why says why). */
static int elect(const member_t *m, int n, int pord, const json_object *pobs, int64_t down_after_ms,
                 int64_t obs_age_ms, topo_t *out)
{
    const member_t *P = &m[pord];
    const char *pname = out->primary;
    int64_t pdown = 0;
    const char *why;
    if (!P->pod || !P->obs || !P->reachable) {
        if (!pobs || bget(pobs, "reachable"))
            return pord;
        int64_t quiet = iget(pobs, "lastOkAgoMs", -1), since = iget(pobs, "downSinceMs", 0);
        pdown = (quiet > since ? quiet : since);
        if (pdown <= 0)
            return pord; /* no evidence at all */
        pdown += obs_age_ms > 0 ? obs_age_ms : 0;
        if (pdown < down_after_ms) {
            out->recheck_after_ms = down_after_ms - pdown;
            return pord;
        }
        why = "unreachable";
    } else if (!strcmp(P->role, "slave")) {
        const char *mh = sget(P->obs, "masterHost");
        int mi = master_at(m, n, mh);
        if (mi >= 0 && mi != pord && bget(P->obs, "linkUp")) {
            snprintf(out->elect_why, sizeof(out->elect_why),
                     "the designated primary %s is a replica linked to %s, a reachable primary: %s stays primary",
                     P->name, m[mi].name, m[mi].name);
            return mi;
        }
        why = "a replica of no reachable primary";
    } else if (!strcmp(P->role, "master")) {
        /* Followed: a replica linked to it (link up; a replica of its IP with the link
         * down may be one that has not yet noticed it restarted). */
        int followed = 0;
        for (int i = 0; i < n; i++)
            if (i != pord && m[i].pod && m[i].obs && m[i].reachable && !strcmp(m[i].role, "slave") && P->ip &&
                sget(m[i].obs, "masterHost") && !strcmp(sget(m[i].obs, "masterHost"), P->ip) && bget(m[i].obs, "linkUp"))
                followed = 1;
        if (followed)
            return pord;
        int64_t poff = iget(P->obs, "offset", -1), best = poff;
        for (int i = 0; i < n; i++)
            if (i != pord && m[i].pod && m[i].obs && m[i].reachable && iget(m[i].obs, "offset", -1) > best)
                best = iget(m[i].obs, "offset", -1);
        if (best <= poff)
            return pord;
        why = "a primary no replica follows, behind a node that has more data (restarted empty?)";
    } else {
        return pord; /* role unknown: wait for a probe that says */
    }
    int64_t window = pdown + 10 * down_after_ms;
    int best = -1;
    int64_t best_off = -1;
    char offs[512] = "";
    for (int k = -1; k < n; k++) {
        /* D first, then by ordinal: ties go to D, then to the lowest ordinal. */
        int i = k < 0 ? pord : k;
        if (k >= 0 && i == pord)
            continue;
        const member_t *x = &m[i];
        if (!x->pod || !x->obs || !x->reachable)
            continue;
        int ok = i == pord || !strcmp(x->role, "master") || (!strcmp(x->role, "slave") && linked_recently(x, window));
        if (!ok)
            continue;
        int64_t off = iget(x->obs, "offset", -1);
        size_t l = strlen(offs);
        snprintf(offs + l, sizeof(offs) - l, "%s%s %lld", l ? ", " : "", x->name, (long long)off);
        if (best < 0 || off > best_off) {
            best = i;
            best_off = off;
        }
    }
    if (best < 0) {
        snprintf(out->elect_why, sizeof(out->elect_why),
                 "the primary %s is %s; no replica is reachable and was linked to its primary within "
                 "10 x downAfter of that: none promoted",
                 pname, why);
        return -1;
    }
    if (pdown)
        snprintf(out->elect_why, sizeof(out->elect_why),
                 "the primary %s is %s for %lld ms (downAfter %lld ms): %s elected with offset %lld (candidates: %s)",
                 pname, why, (long long)pdown, (long long)down_after_ms, m[best].name,
                 (long long)best_off, offs);
    else
        snprintf(out->elect_why, sizeof(out->elect_why),
                 "the primary %s is %s: %s elected with offset %lld (candidates: %s)", pname,
                 why, m[best].name, (long long)best_off, offs);
    return best;
}

void topo_compute(const char *name, int size, const char *status_primary, const json_object *pods,
                  const json_object *observation, topo_t *out)
{
    topo_compute_failover(name, size, status_primary, pods, observation, 0, 0, out);
}

void topo_compute_failover(const char *name, int size, const char *status_primary, const json_object *pods,
                           const json_object *observation, int64_t down_after_ms, int64_t obs_age_ms, topo_t *out)
{
    topo_compute_switchover(name, size, status_primary, pods, observation, down_after_ms, obs_age_ms, NULL, out);
}

/* Fill x->obs, reachable and role from the observation node of x's pod at its IP. */
static void observe_member(member_t *x, const json_object *obs)
{
    const json_object *n = obs ? obs_node(obs, x->name) : NULL;
    const char *oip = sget(n, "ip");
    x->role = "";
    /* An observation of another IP is of a pod that is gone. */
    if (n && x->ip && oip && !strcmp(oip, x->ip)) {
        x->obs = n;
        x->reachable = bget(n, "reachable");
        const char *r = sget(n, "role");
        x->role = r ? r : "";
    }
}

/* 1 when x is a reachable master (observed at its pod's IP). */
static int is_master(const member_t *x)
{
    return x->pod && x->obs && x->reachable && !strcmp(x->role, "master") && x->ip && *x->ip;
}

/* 1 when any member, present or terminating, answered the observer. */
static int any_reachable(const member_t *m, const member_t *dying, int n)
{
    for (int i = 0; i < n; i++)
        if ((m[i].obs && m[i].reachable) || (dying[i].obs && dying[i].reachable))
            return 1;
    return 0;
}

/* 1 when x is a reachable replica of ip with its link up. */
static int linked_to(const member_t *x, const char *ip)
{
    const char *mh = sget(x->obs, "masterHost");
    return x->pod && x->obs && x->reachable && !strcmp(x->role, "slave") && ip && mh && !strcmp(mh, ip) &&
           iget(x->obs, "masterPort", 0) == TOPO_REDIS_PORT && bget(x->obs, "linkUp");
}

static int pod_ready(const json_object *pod)
{
    const json_object *conds = jsonx_get(jsonx_get(pod, "status"), "conditions");
    for (size_t i = 0; i < arr_len(conds); i++) {
        const json_object *c = json_object_array_get_idx(conds, i);
        const char *t = sget(c, "type"), *st = sget(c, "status");
        if (t && !strcmp(t, "Ready"))
            return st && !strcmp(st, "True");
    }
    return 0;
}

/* 1 when pod x runs another revision than rev (SWITCHOVER); no rollout when rev is "". */
static int outdated(const member_t *x, const char *rev)
{
    const char *have = JSONX_STR_AT(x->pod, "metadata", "labels", "controller-revision-hash");
    return rev && *rev && x->pod && (!have || strcmp(have, rev));
}

/* SWITCHOVER (2): the best candidate to take the role from the primary P (a reachable
 * master, present or terminating) at ordinal pord, or -1 with the reason in why. */
static int switch_candidate(const member_t *m, int n, int pord, const member_t *P, const char *rev, int rollout,
                            char *why, size_t whylen)
{
    int best = -1;
    int64_t best_off = -1, poff = iget(P->obs, "offset", -1);
    char seen[600] = "";
    for (int i = 0; i < n; i++) {
        const member_t *x = &m[i];
        if (i == pord || !x->pod)
            continue;
        const char *no = !x->obs || !x->reachable       ? "unreachable"
                         : !pod_ready(x->pod)           ? "not Ready"
                         : !linked_to(x, P->ip)         ? "not linked to the primary"
                         : rollout && outdated(x, rev)  ? "not on the new revision"
                         : poff - iget(x->obs, "offset", -1) > TOPO_SWITCHOVER_MAX_LAG ? "behind"
                                                                                        : NULL;
        size_t l = strlen(seen);
        snprintf(seen + l, sizeof(seen) - l, "%s%s %s", l ? ", " : "", x->name, no ? no : "caught up");
        if (no)
            continue;
        int64_t off = iget(x->obs, "offset", -1);
        if (best < 0 || off > best_off) {
            best = i;
            best_off = off;
        }
    }
    if (best < 0)
        snprintf(why, whylen, "%s", *seen ? seen : "no replica");
    else
        snprintf(why, whylen, "%s has offset %lld, the primary %lld (%s)", m[best].name, (long long)best_off,
                 (long long)poff, seen);
    return best;
}

/* Name pod x for deletion (its uid as the precondition), with the reason. */
static void delete_member(const member_t *x, topo_t *out, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void delete_member(const member_t *x, topo_t *out, const char *fmt, ...)
{
    const char *uid = JSONX_STR_AT(x->pod, "metadata", "uid");
    snprintf(out->delete_pod, sizeof(out->delete_pod), "%s", x->name);
    snprintf(out->delete_uid, sizeof(out->delete_uid), "%s", uid ? uid : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->delete_why, sizeof(out->delete_why), fmt, ap);
    va_end(ap);
}

/* SWITCHOVER (4): nothing of the set answers. The rollout goes as the StatefulSet's
 * RollingUpdate would: once every pod is present and Ready, the outdated pod of highest
 * ordinal (the primary's too); there is no role to hand over. */
static void blind_step(const member_t *m, int n, const char *rev, topo_t *out)
{
    int stale = -1, stuck = -1;
    const char *awaited = NULL;
    for (int i = 0; i < n; i++) {
        if (!m[i].pod) {
            awaited = awaited ? awaited : "";
            continue;
        }
        int ready = pod_ready(m[i].pod);
        if (!ready && !awaited)
            awaited = m[i].name;
        if (outdated(&m[i], rev)) {
            stale = i; /* the highest ordinal */
            if (!ready)
                stuck = i; /* of the old revision and not Ready: it serves nothing, it goes first */
        }
    }
    if (stale < 0)
        return;
    if (stuck < 0 && awaited) {
        out->switch_wait = 1;
        snprintf(out->switch_why, sizeof(out->switch_why),
                 "rolling out with no Redis node answering: waiting for %s%s to be Ready before restarting %s",
                 *awaited ? "pod " : "every pod", awaited, m[stale].name);
        return;
    }
    const member_t *x = &m[stuck >= 0 ? stuck : stale];
    delete_member(x, out,
                  "rolling out revision %s: %s restarted (no Redis node of the set answers, so no role to hand over: "
                  "the StatefulSet's order, highest ordinal first, each once the others are Ready)",
                  rev, x->name);
}

/* SWITCHOVER (2) and (3) in topology.h: with the primary P at pord a reachable master
 * (present, or terminating when dying), plan the next step of a rollout or of the
 * primary's deletion into out. */
static void rollout_step(const member_t *m, int n, int pord, const member_t *P, int dying, const char *rev,
                         topo_t *out)
{
    char why[700];
    int present = 0, ready = 1, stale = -1, stuck = -1;
    const char *awaited = NULL;
    for (int i = 0; i < n; i++) {
        if (!m[i].pod) {
            awaited = awaited ? awaited : "";
            continue;
        }
        present++;
        int ok = pod_ready(m[i].pod) && m[i].obs && m[i].reachable && (i == pord || linked_to(&m[i], P->ip));
        if (!ok && !awaited)
            awaited = m[i].name;
        ready &= ok;
        if (i != pord && outdated(&m[i], rev)) {
            stale = i; /* the highest ordinal */
            if (!pod_ready(m[i].pod))
                stuck = i;
        }
    }
    if (!dying && stale < 0 && !outdated(P, rev))
        return; /* nothing to roll */
    if (!dying && stuck >= 0 && (present < n || !ready)) {
        /* A replica of an old revision that is not Ready serves nothing, and waiting for
         * it would hold the rollout for ever (a revision that crashes, then fixed). */
        delete_member(&m[stuck], out,
                      "rolling out revision %s: replica %s runs an old revision and is not Ready: restarted on the "
                      "new one",
                      rev, m[stuck].name);
        return;
    }
    if (!dying && stale >= 0) {
        if (present < n || !ready) {
            out->switch_wait = 1;
            snprintf(out->switch_why, sizeof(out->switch_why),
                     "rolling out: waiting for %s%s to be back, Ready and linked before restarting %s",
                     awaited && *awaited ? "pod " : "every pod", awaited && *awaited ? awaited : "", m[stale].name);
            return;
        }
        delete_member(&m[stale], out, "rolling out revision %s: replica %s restarted (deleted; every replica linked to %s)",
                      rev, m[stale].name, P->name);
        return;
    }
    if (n == 1) {
        if (dying)
            return;
        delete_member(P, out, "rolling out revision %s: %s restarted in place (size 1: no replica to hand the primary role to)",
                      rev, P->name);
        return;
    }
    int best = switch_candidate(m, n, pord, P, rev, !dying, why, sizeof(why));
    if (best < 0) {
        /* A replica still coming back is worth waiting for; none there at all is not. */
        int any = 0;
        for (int i = 0; i < n; i++)
            any |= i != pord && m[i].pod && linked_to(&m[i], P->ip);
        if (any)
            out->switch_wait = 1;
        else
            out->switch_blocked = 1;
        snprintf(out->switch_why, sizeof(out->switch_why), "the primary %s %s, but no replica can take its role (%s)%s",
                 P->name, dying ? "is being deleted" : "runs an old revision", why,
                 any ? ": waiting" : ": no switchover");
        return;
    }
    out->switch_record = 1;
    snprintf(out->switch_to, sizeof(out->switch_to), "%s", m[best].name);
    snprintf(out->switch_why, sizeof(out->switch_why), "switchover: the primary %s %s: %s takes its role: %s",
             P->name, dying ? "is being deleted" : "runs an old revision", m[best].name, why);
}

/* What topo_compute_switchover works from, step by step. */
typedef struct {
    const char *name;
    int size, n_members, pord;
    member_t m[TOPO_MAX_NODES], dying[TOPO_MAX_NODES];
    const json_object *obs; /* NULL: no observation */
    const member_t *O;      /* SWITCHOVER (1): the old primary of a recorded handover */
    int handing, switching, promote, primary_ok;
    /* the nodes' health, for the condition */
    int linked;
    char unreachable[512], linkdown[512];
} tctx_t;

/* Pods by ordinal into t->m, the terminating ones apart into t->dying (SWITCHOVER reads
 * them), each with its observation node. */
static void collect_members(tctx_t *t, const json_object *pods)
{
    for (size_t i = 0; i < arr_len(pods); i++) {
        const json_object *p = json_object_array_get_idx(pods, i);
        const char *pn = JSONX_STR_AT(p, "metadata", "name");
        int ord = ordinal_of(t->name, t->size, pn);
        if (ord < 0 || ord >= TOPO_MAX_NODES)
            continue;
        member_t *x = jsonx_get(jsonx_get(p, "metadata"), "deletionTimestamp") ? &t->dying[ord] : &t->m[ord];
        x->pod = p;
        x->name = pn;
        x->ip = JSONX_STR_AT(p, "status", "podIP");
        x->label = JSONX_STR_AT(p, "metadata", "labels", TOPO_ROLE_LABEL);
    }
    for (int i = 0; i < t->n_members; i++) {
        if (t->m[i].pod)
            observe_member(&t->m[i], t->obs);
        if (t->dying[i].pod)
            observe_member(&t->dying[i], t->obs);
    }
}

/* Role labels: they follow the designation, so the -primary Service never selects a pod
 * that only claims to be a primary (a restarted replica comes up as one); during a
 * handover, the new primary only once it says it is one. A terminating pod keeps its
 * label, but for role=primary moving away from it. */
static void label_step(const tctx_t *t, topo_t *out)
{
    for (int i = 0; i < t->n_members; i++) {
        const member_t *x = t->m[i].pod ? &t->m[i] : t->switching && &t->dying[i] == t->O ? t->O : NULL;
        if (!x || out->elect || out->switch_record)
            continue;
        const char *want = i == t->pord && x == &t->m[i] ? "primary" : "replica";
        if (i == t->pord && t->switching)
            continue;
        if (!x->label || strcmp(x->label, want)) {
            topo_label_t *l = &out->labels[out->n_labels++];
            snprintf(l->pod, sizeof(l->pod), "%s", x->name);
            l->role = want;
            l->have = x->label ? x->label : "";
        }
    }
}

/* Append name to the comma-separated list. */
static void list_add(char *list, size_t cap, const char *name)
{
    size_t l = strlen(list);
    snprintf(list + l, cap - l, "%s%s", l ? ", " : "", name);
}

/* The Redis commands (FAILOVER TO of a handover, REPLICAOF NO ONE of a promotion, the
 * REPLICAOF of every node that follows another primary) and status.nodes; the health
 * counts into t. */
static void command_step(tctx_t *t, topo_t *out)
{
    const member_t *P = &t->m[t->pord], *O = t->O;
    /* With the promotion go the other nodes' REPLICAOF to it, in the same plan: a
     * replica left following the old primary's address would follow it again if it
     * came back, giving it the replica min-replicas-to-write asks for. */
    int hold = out->elect || out->no_candidate || t->switching || out->switch_record;
    if (t->handing) {
        topo_cmd_t *c = &out->cmds[out->n_cmds++];
        snprintf(c->pod, sizeof(c->pod), "%s", O->name);
        snprintf(c->ip, sizeof(c->ip), "%s", O->ip);
        snprintf(c->primary_ip, sizeof(c->primary_ip), "%s", P->ip);
        c->failover_to = 1;
        snprintf(c->why, sizeof(c->why),
                 "switchover: %s hands the primary role to %s (FAILOVER TO %s %d: writes paused until %s has "
                 "every write, at most %d ms)",
                 O->name, P->name, P->ip, TOPO_REDIS_PORT, P->name, TOPO_FAILOVER_TIMEOUT_MS);
    }
    if (t->promote) {
        topo_cmd_t *c = &out->cmds[out->n_cmds++];
        snprintf(c->pod, sizeof(c->pod), "%s", P->name);
        snprintf(c->ip, sizeof(c->ip), "%s", P->ip);
        c->no_one = 1;
        snprintf(c->why, sizeof(c->why), "%s promoted to primary (REPLICAOF NO ONE): %s", P->name, out->elect_why);
    }
    int64_t poffset = t->primary_ok ? iget(P->obs, "offset", -1) : -1;
    for (int i = 0; i < t->n_members; i++) {
        const member_t *x = &t->m[i];
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
        if (i == t->pord) {
            nd->lag_bytes = t->primary_ok ? 0 : -1;
            continue;
        }
        if (!x->reachable) {
            list_add(t->unreachable, sizeof(t->unreachable), x->name);
            continue;
        }
        const char *mh = sget(x->obs, "masterHost");
        int64_t mp = iget(x->obs, "masterPort", 0);
        int follows = !strcmp(x->role, "slave") && mh && P->ip && !strcmp(mh, P->ip) && mp == TOPO_REDIS_PORT;
        if (follows && nd->offset >= 0 && poffset >= 0)
            nd->lag_bytes = poffset > nd->offset ? poffset - nd->offset : 0;
        if (hold || !(t->primary_ok || t->promote) || !*x->role || follows) {
            if (follows && nd->link_up)
                t->linked++;
            else if (follows)
                list_add(t->linkdown, sizeof(t->linkdown), x->name);
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
}

/* ReplicationHealthy's reason and message: the first that applies. */
static void health_step(const tctx_t *t, topo_t *out)
{
    const member_t *P = &t->m[t->pord];
    char count[32];
    snprintf(count, sizeof(count), "%d/%d", t->linked, t->size - 1);
    if (!t->obs)
        add_msg(out, "NotObserved", "no observation of the Redis nodes yet%s%s", "", "");
    else if (out->elect)
        add_msg(out, "FailingOver", "%s%s", out->elect_why, "");
    else if (out->switch_record)
        add_msg(out, "SwitchingOver", "%s%s", out->switch_why, "");
    else if (t->switching)
        add_msg(out, "SwitchingOver", "%s hands the primary role to %s", t->O->name, out->primary);
    else if (out->no_candidate)
        add_msg(out, "NoFailoverCandidate", "%s%s", out->elect_why, "");
    else if (t->promote)
        add_msg(out, "Promoting", "%s%s", out->elect_why, "");
    else if (!P->pod || !P->obs || !P->reachable)
        add_msg(out, "PrimaryUnreachable", "the primary %s is not reachable%s; no replica is promoted here",
                out->primary, "");
    else if (!t->primary_ok)
        add_msg(out, "NoPrimary", "the designated primary %s does not report role master (%s); no primary is elected here",
                out->primary, *P->role ? P->role : "unknown role");
    else if (out->n_cmds)
        add_msg(out, "Repointing", "%s replicas linked; repointing the others to %s", count, out->primary);
    else if (*t->unreachable)
        add_msg(out, "NodeUnreachable", "not reachable: %s (%s replicas linked)", t->unreachable, count);
    else if (*t->linkdown)
        add_msg(out, "ReplicaLinkDown", "link to the primary down: %s (%s replicas linked)", t->linkdown, count);
    else if (t->linked < t->size - 1)
        add_msg(out, "ReplicasMissing", "%s replicas linked to %s", count, out->primary);
    if (!out->reason) {
        out->healthy = 1;
        out->reason = "AllReplicasLinked";
        snprintf(out->message, sizeof(out->message), "%s replicas linked to %s", count, out->primary);
    }
}

void topo_compute_switchover(const char *name, int size, const char *status_primary, const json_object *pods,
                             const json_object *observation, int64_t down_after_ms, int64_t obs_age_ms,
                             const topo_roll_t *roll, topo_t *out)
{
    memset(out, 0, sizeof(*out));
    tctx_t tc;
    memset(&tc, 0, sizeof(tc));
    tctx_t *t = &tc;
    t->name = name;
    t->size = size;
    t->n_members = size < TOPO_MAX_NODES ? size : TOPO_MAX_NODES;
    t->obs = observation && json_object_is_type(observation, json_type_object) ? observation : NULL;
    t->pord = ordinal_of(name, size, status_primary);
    if (t->pord < 0)
        t->pord = 0;
    snprintf(out->primary, sizeof(out->primary), "%s-%d", name, t->pord);
    collect_members(t, pods);
    member_t *m = t->m, *dying = t->dying;
    const json_object *obs = t->obs;
    int pord = t->pord;
    /* SWITCHOVER (1): a handover recorded, from O (present or terminating) to P. */
    const char *rev = roll && roll->update_revision ? roll->update_revision : "";
    int oord = roll ? ordinal_of(name, size, roll->switchover_from) : -1;
    const member_t *O = t->O = oord < 0 || oord == pord ? NULL : m[oord].pod ? &m[oord] : &dying[oord];
    t->handing = obs && O && is_master(O) && linked_to(&m[pord], O->ip);
    int handed = obs && O && !t->handing && O->pod && O->obs && O->reachable && !strcmp(O->role, "slave") &&
                 m[pord].ip && sget(O->obs, "masterHost") && !strcmp(sget(O->obs, "masterHost"), m[pord].ip) &&
                 !is_master(&m[pord]);
    t->switching = t->handing || handed;
    if (t->switching)
        snprintf(out->switchover_from, sizeof(out->switchover_from), "%s", O->name);
    if (obs && down_after_ms > 0 && !t->switching) {
        /* The designated primary's evidence is read by name, whatever the IP: a deleted
         * pod's last node, or its successor's (never answered: down since first probed). */
        int winner = elect(m, t->n_members, pord, obs_node(obs, out->primary), down_after_ms, obs_age_ms, out);
        if (winner < 0) {
            out->no_candidate = 1;
        } else if (winner != pord) {
            out->elect = 1;
            snprintf(out->elected, sizeof(out->elected), "%s", m[winner].name);
        }
    }
    /* SWITCHOVER (2), (3): the primary a reachable master, present or terminating. */
    const member_t *D = m[pord].pod ? &m[pord] : &dying[pord];
    if (obs && roll && !out->elect && !out->no_candidate && !t->switching && !out->recheck_after_ms && is_master(D))
        rollout_step(m, t->n_members, pord, D, D == &dying[pord], rev, out);
    else if (obs && roll && *rev && out->no_candidate && !t->switching && !any_reachable(m, dying, t->n_members))
        blind_step(m, t->n_members, rev, out);
    label_step(t, out);

    const member_t *P = &m[pord];
    t->primary_ok = P->pod && P->obs && P->reachable && !strcmp(P->role, "master") && P->ip && *P->ip;
    /* FAILOVER: the designated primary elected while a replica: promote it, alone. */
    t->promote = obs && down_after_ms > 0 && !out->elect && !out->no_candidate && !t->switching && P->pod &&
                 P->obs && P->reachable && !strcmp(P->role, "slave") && P->ip && *P->ip;
    command_step(t, out);
    health_step(t, out);
    if (out->elect)
        snprintf(out->primary, sizeof(out->primary), "%s", out->elected);
    if (out->switch_record) {
        snprintf(out->switchover_from, sizeof(out->switchover_from), "%s", out->primary);
        snprintf(out->primary, sizeof(out->primary), "%s", out->switch_to);
    }
}
