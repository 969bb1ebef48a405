/* topology: pure replication decisions. See topology.h.
 *
 * topo_compute_switchover runs the steps of topology.h in order, as a table (steps[] at
 * the end): the handover of SWITCHOVER (1), the election of FAILOVER, the rollout of
 * SWITCHOVER (2)-(4), the role labels, the promotion, the Redis commands with
 * status.nodes, the ReplicationHealthy condition, and the record of what was decided.
 * Each step reads what the ones before it found (tctx_t) and writes its part of topo_t.
 * The rollout's own step is a table of rules too (roll_rules[]): the first that applies
 * decides. */
#include "topology.h"

#include "buf.h"
#include "jsonx.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    return jsonx_find(jsonx_get(observation, "nodes"), "pod", pod);
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

/* 1 when x answers the observer (observed at its pod's IP). */
static int answers(const member_t *x)
{
    return x->pod && x->obs && x->reachable;
}

/* 1 when x answers with role r ("master", "slave"). */
static int answers_as(const member_t *x, const char *r)
{
    return answers(x) && !strcmp(x->role, r);
}

/* x's observed masterHost, or NULL. */
static const char *master_host(const member_t *x)
{
    return jsonx_str(x->obs, "masterHost");
}

/* 1 when replica x was linked to its primary recently (FAILOVER in topology.h): link up,
 * or down for at most window_ms (observerd's linkDownSinceMs; absent = unknown = no). */
static int linked_recently(const member_t *x, int64_t window_ms)
{
    if (jsonx_true(x->obs, "linkUp"))
        return 1;
    int64_t d = jsonx_int_or(x->obs, "linkDownSinceMs", -1);
    return d >= 0 && d <= window_ms;
}

/* The index of the reachable master of the set at ip, or -1. */
static int master_at(const member_t *m, int n, const char *ip)
{
    for (int i = 0; ip && *ip && i < n; i++)
        if (answers_as(&m[i], "master") && m[i].ip && !strcmp(m[i].ip, ip))
            return i;
    return -1;
}

/* 1 when x is a reachable master (observed at its pod's IP). */
static int is_master(const member_t *x)
{
    return answers_as(x, "master") && x->ip && *x->ip;
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
    const char *mh = master_host(x);
    return answers_as(x, "slave") && ip && mh && !strcmp(mh, ip) &&
           jsonx_int_or(x->obs, "masterPort", 0) == TOPO_REDIS_PORT && jsonx_true(x->obs, "linkUp");
}

static int pod_ready(const json_object *pod)
{
    const json_object *ready = jsonx_find(JSONX_AT(pod, "status", "conditions"), "type", "Ready");
    return ready && jsonx_str_is(ready, "status", "True");
}

/* 1 when pod x runs another revision than rev (SWITCHOVER); no rollout when rev is "". */
static int outdated(const member_t *x, const char *rev)
{
    const char *have = JSONX_STR_AT(x->pod, "metadata", "labels", "controller-revision-hash");
    return rev && *rev && x->pod && (!have || strcmp(have, rev));
}

/* Append name to the comma-separated list. */
static void list_add(char *list, size_t cap, const char *name)
{
    size_t l = strlen(list);
    snprintf(list + l, cap - l, "%s%s", l ? ", " : "", name);
}

/* ---- What the steps work from --------------------------------------------------------- */

/* What topo_compute_switchover works from, step by step. */
typedef struct {
    const char *name;
    int size, n_members, pord;
    member_t m[TOPO_MAX_NODES], dying[TOPO_MAX_NODES];
    const json_object *obs; /* NULL: no observation */
    int64_t down_after_ms, obs_age_ms;
    const topo_roll_t *roll; /* NULL: no SWITCHOVER */
    const char *rev;         /* the update revision, "" none */
    const member_t *O;       /* SWITCHOVER (1): the old primary of a recorded handover */
    int handing, switching, promote, primary_ok;
    /* the nodes' health, for the condition */
    int linked;
    char unreachable[512], linkdown[512];
} tctx_t;

/* Fill x->obs, reachable and role from the observation node of x's pod at its IP. */
static void observe_member(member_t *x, const json_object *obs)
{
    const json_object *n = obs ? obs_node(obs, x->name) : NULL;
    const char *oip = jsonx_str(n, "ip");
    x->role = "";
    /* An observation of another IP is of a pod that is gone. */
    if (n && x->ip && oip && !strcmp(oip, x->ip)) {
        x->obs = n;
        x->reachable = jsonx_true(n, "reachable");
        const char *r = jsonx_str(n, "role");
        x->role = r ? r : "";
    }
}

/* Pods by ordinal into t->m, the terminating ones apart into t->dying (SWITCHOVER reads
 * them), each with its observation node. */
static void collect_members(tctx_t *t, const json_object *pods)
{
    for (size_t i = 0; i < jsonx_len(pods); i++) {
        const json_object *p = json_object_array_get_idx(pods, i);
        const char *pn = JSONX_STR_AT(p, "metadata", "name");
        int ord = ordinal_of(t->name, t->size, pn);
        if (ord < 0 || ord >= TOPO_MAX_NODES)
            continue;
        member_t *x = JSONX_AT(p, "metadata", "deletionTimestamp") ? &t->dying[ord] : &t->m[ord];
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

/* ---- FRESHNESS ------------------------------------------------------------------------- */

/* 1 when x (a pod with an IP) was probed less than lead_ms before the observation was
 * taken: its node at its IP, probedAgoMs in 0..lead_ms-1. */
static int probed_since(const member_t *x, int64_t lead_ms)
{
    int64_t ago = x->obs ? jsonx_int_or(x->obs, "probedAgoMs", -1) : -1;
    return ago >= 0 && ago < lead_ms;
}

int topo_observation_current(const char *name, int size, const json_object *pods, const json_object *observation,
                             int64_t lead_ms, char *why, size_t cap)
{
    tctx_t t;
    memset(&t, 0, sizeof(t));
    t.name = name;
    t.size = size;
    t.n_members = size < TOPO_MAX_NODES ? size : TOPO_MAX_NODES;
    t.obs = jsonx_typed(observation, json_type_object);
    collect_members(&t, pods);
    for (int i = 0; i < 2 * t.n_members; i++) {
        const member_t *x = i < t.n_members ? &t.m[i] : &t.dying[i - t.n_members];
        if (x->pod && x->ip && *x->ip && !probed_since(x, lead_ms)) {
            snprintf(why, cap, "%s was not probed since the last Redis command (%s)", x->name,
                     x->obs ? "its last probe is older" : "not in the observation at its IP");
            return 0;
        }
    }
    return 1;
}

/* ---- FAILOVER: the election ------------------------------------------------------------- */

/* FAILOVER (a), the one observer's evidence against its replicas'. P has failed every
 * probe for failing_ms (downSinceMs, counted back from the observation). A reachable
 * replica of P's address with its link up that heard from P after that began
 * (masterIoAgoMs, at most that long ago, below failing_ms) says P is alive and cut off
 * from the operator alone: *witness. One probed less than a second after it began
 * cannot tell (Redis counts master_last_io_seconds_ago in whole seconds): *undecided.
 * A SIGSTOPped or isolated P is heard by nobody (its replicas' links stay up until
 * repl-timeout, but their last I/O grows), a dead one's links drop; an idle P is heard
 * only at its PING every 10 s. */
static void witnesses(const tctx_t *t, int64_t failing_ms, const member_t **witness, const member_t **undecided)
{
    const member_t *P = &t->m[t->pord];
    *witness = *undecided = NULL;
    for (int i = 0; i < t->n_members && P->ip; i++) {
        const member_t *x = &t->m[i];
        if (i == t->pord || !linked_to(x, P->ip) || !jsonx_get(x->obs, "masterIoAgoMs"))
            continue; /* (an observerd that does not say it: no witness to wait for) */
        int64_t io = jsonx_int_or(x->obs, "masterIoAgoMs", -1), ago = jsonx_int_or(x->obs, "probedAgoMs", -1);
        if (io >= 0 && io < failing_ms && !*witness)
            *witness = x;
        else if (ago < 0 || ago + 1000 > failing_ms)
            *undecided = *undecided ? *undecided : x;
    }
}

/* FAILOVER (a): why the designated primary P, not answering, must be replaced
 * ("unreachable") once observerd has heard nothing from it for downAfter, with *pdown how
 * long; NULL while it is short of that (then recheck_after_ms says when it will not be),
 * while a replica still hears it (witness), or there is no evidence at all. */
static const char *cause_unreachable(const tctx_t *t, const json_object *pobs, int64_t *pdown, topo_t *out)
{
    if (!pobs || jsonx_true(pobs, "reachable"))
        return NULL;
    int64_t quiet = jsonx_int_or(pobs, "lastOkAgoMs", -1), since = jsonx_int_or(pobs, "downSinceMs", 0);
    *pdown = quiet > since ? quiet : since;
    if (*pdown <= 0)
        return NULL; /* no evidence at all */
    const member_t *w, *u;
    witnesses(t, since > 0 ? since : *pdown, &w, &u);
    if (w) {
        char msg[512];
        snprintf(msg, sizeof(msg),
                 "the primary %s does not answer the operator, but %s heard from it less than %lld ms ago: it is "
                 "alive, not replaced",
                 out->primary, w->name, (long long)jsonx_int_or(w->obs, "masterIoAgoMs", -1));
        add_msg(out, "PrimaryUnreachable", "%s%s", msg, "");
        return NULL;
    }
    *pdown += t->obs_age_ms > 0 ? t->obs_age_ms : 0;
    if (*pdown < t->down_after_ms) {
        out->recheck_after_ms = t->down_after_ms - *pdown;
        return NULL;
    }
    if (u) { /* its next probe tells: observerd reports a down primary every second while so */
        char msg[512];
        snprintf(msg, sizeof(msg),
                 "the primary %s has not answered for %lld ms; waiting for %s's next probe to tell whether it still "
                 "hears it",
                 out->primary, (long long)*pdown, u->name);
        add_msg(out, "PrimaryUnreachable", "%s%s", msg, "");
        out->recheck_after_ms = 1000;
        return NULL;
    }
    return "unreachable";
}

/* FAILOVER (b): P a replica of no reachable master of the set. A replica linked to one
 * (P's promotion recorded, then the old primary came back) elects that master:
 * *winner. */
static const char *cause_replica(const tctx_t *t, const member_t *P, int *winner, topo_t *out)
{
    int mi = master_at(t->m, t->n_members, master_host(P));
    if (mi >= 0 && mi != t->pord && jsonx_true(P->obs, "linkUp")) {
        snprintf(out->elect_why, sizeof(out->elect_why),
                 "the designated primary %s is a replica linked to %s, a reachable primary: %s stays primary", P->name,
                 t->m[mi].name, t->m[mi].name);
        *winner = mi;
        return NULL;
    }
    return "a replica of no reachable primary";
}

/* The keys x holds (INFO keyspace), -1 unknown. */
static int64_t keys_of(const member_t *x)
{
    return jsonx_int_or(x->obs, "keys", -1);
}

/* FAILOVER (c): P a master that no replica follows (a replica linked to it; one of its IP
 * with the link down may not have noticed it restarted) while a reachable node has a
 * higher offset. */
static const char *cause_master_behind(const tctx_t *t, const member_t *P)
{
    const member_t *m = t->m;
    int64_t poff = jsonx_int_or(P->obs, "offset", -1), best = poff;
    int emptied = 0;
    for (int i = 0; i < t->n_members; i++) {
        if (i == t->pord || !answers(&m[i]))
            continue;
        if (!strcmp(m[i].role, "slave") && P->ip && master_host(&m[i]) && !strcmp(master_host(&m[i]), P->ip) &&
            jsonx_true(m[i].obs, "linkUp"))
            return NULL; /* followed */
        int64_t off = jsonx_int_or(m[i].obs, "offset", -1);
        best = off > best ? off : best;
        /* A restart (AOF) starts the offset again, so a primary restarted empty and
         * replicas resynchronised from a restart before it can show equal offsets: the
         * keys tell (INFO keyspace). Only where the offsets do not say P has more. */
        emptied |= keys_of(P) == 0 && keys_of(&m[i]) > 0 && off >= poff;
    }
    if (best > poff)
        return "a primary no replica follows, behind a node that has more data (restarted empty?)";
    return emptied ? "a primary no replica follows, holding no key while a node that does not follow it holds some "
                     "(restarted empty?)"
                   : NULL;
}

/* The best candidate of an election (FAILOVER in topology.h): D itself when reachable,
 * every other reachable master or replica linked within window_ms; the highest offset
 * wins, ties to D, then to the lowest ordinal. -1 when none; offs lists them. */
static int best_candidate(const tctx_t *t, int64_t window_ms, char *offs, size_t cap, int64_t *best_off)
{
    int best = -1;
    for (int k = -1; k < t->n_members; k++) {
        /* D first, then by ordinal: ties go to D, then to the lowest ordinal. */
        int i = k < 0 ? t->pord : k;
        const member_t *x = &t->m[i];
        if ((k >= 0 && i == t->pord) || !answers(x))
            continue;
        if (i != t->pord && strcmp(x->role, "master") && !(!strcmp(x->role, "slave") && linked_recently(x, window_ms)))
            continue;
        int64_t off = jsonx_int_or(x->obs, "offset", -1);
        size_t l = strlen(offs);
        snprintf(offs + l, cap - l, "%s%s %lld", l ? ", " : "", x->name, (long long)off);
        /* on equal offsets, one that holds keys before one that holds none (offsets of
         * servers restarted from their AOF start again: equal says nothing then) */
        if (best < 0 || off > *best_off || (off == *best_off && keys_of(x) > 0 && keys_of(&t->m[best]) == 0)) {
            best = i;
            *best_off = off;
        }
    }
    return best;
}

/* How long ago the replicas lost the primary they followed: the shortest time any
 * reachable replica but the designated one has had its link down (0 when one is linked).
 * Sentinel counts "linked recently" from when the master it follows went down; a
 * designated primary that answers (restarted, recreated elsewhere: finding 4, after an
 * operator outage longer than 10 x downAfter) has no such time, but the replicas lost
 * their master when it went, and that time is theirs. */
static int64_t replicas_lost_ms(const tctx_t *t)
{
    int64_t lost = -1;
    for (int i = 0; i < t->n_members; i++) {
        const member_t *x = &t->m[i];
        if (i == t->pord || !answers_as(x, "slave"))
            continue;
        int64_t d = jsonx_true(x->obs, "linkUp") ? 0 : jsonx_int_or(x->obs, "linkDownSinceMs", -1);
        if (d >= 0 && (lost < 0 || d < lost))
            lost = d;
    }
    return lost > 0 ? lost : 0;
}

/* The best candidate (best, offset 0 and no key: a server that started empty and took no
 * write since, evidence of nothing) or, when a reachable node holds keys, the one of
 * those with the highest offset (then the lowest ordinal), however long ago it was
 * linked: "linked recently" prefers fresher data to older, not nothing to some. Its
 * name is added to offs (offs NULL: only asked which, *best_off untouched). */
static int holder_instead(const tctx_t *t, int best, char *offs, size_t cap, int64_t *best_off)
{
    int holder = -1;
    int64_t hoff = -1;
    for (int i = 0; i < t->n_members; i++) {
        const member_t *x = &t->m[i];
        int64_t off = jsonx_int_or(x->obs, "offset", -1);
        if (answers(x) && keys_of(x) > 0 && (holder < 0 || off > hoff)) {
            holder = i;
            hoff = off;
        }
    }
    if (holder < 0 || !offs)
        return holder < 0 ? best : holder;
    size_t l = strlen(offs);
    snprintf(offs + l, cap - l, "; none holds a key: %s, which holds %lld, instead", t->m[holder].name,
             (long long)keys_of(&t->m[holder]));
    *best_off = hoff;
    return holder;
}

/* FAILOVER (topology.h): decide whether an election is held and who wins. Returns the
 * winner's ordinal, pord itself when there is nothing to change, or -1 when an election
 * found no candidate (out->elect_why says why). A designated primary held to be behind
 * (FAILOVER (c)) that holds no key while a node holds some never wins its own election:
 * with no candidate holding keys, nothing is elected and no replica is repointed to it
 * (a safe operator never points a replica that holds data at a master that holds none). */
static int elect(const tctx_t *t, const json_object *pobs, topo_t *out)
{
    const member_t *P = &t->m[t->pord];
    int64_t pdown = 0;
    int winner = t->pord;
    const char *why = !answers(P)                  ? cause_unreachable(t, pobs, &pdown, out)
                      : !strcmp(P->role, "slave")  ? cause_replica(t, P, &winner, out)
                      : !strcmp(P->role, "master") ? cause_master_behind(t, P)
                                                   : NULL; /* role unknown: wait for a probe that says */
    if (!why)
        return winner;
    char offs[512] = "";
    /* Linked recently: within 10 x downAfter of the primary's going, counted from the
     * designated primary's downtime when it is the one down, else (it answers, as a
     * replica or a master behind) from when the replicas lost the primary they follow. */
    int64_t best_off = -1, since = answers(P) ? replicas_lost_ms(t) : pdown;
    int best = best_candidate(t, since + 10 * t->down_after_ms, offs, sizeof(offs), &best_off);
    if (best >= 0 && best_off <= 0 && keys_of(&t->m[best]) == 0)
        best = holder_instead(t, best, offs, sizeof(offs), &best_off);
    /* (c) and D empty while a node holds keys: D keeps nothing, and nobody is emptied */
    int emptied = best == t->pord && answers_as(P, "master") && keys_of(P) == 0 && holder_instead(t, -1, NULL, 0,
                                                                                                    &best_off) >= 0;
    if (emptied)
        snprintf(out->elect_why, sizeof(out->elect_why),
                 "the primary %s is %s; it holds no key, and no node that holds some is reachable and was linked to "
                 "its primary within 10 x downAfter of losing it (candidates: %.400s): none promoted, none repointed "
                 "to it",
                 out->primary, why, offs);
    if (emptied)
        return -1;
    if (best < 0)
        snprintf(out->elect_why, sizeof(out->elect_why),
                 "the primary %s is %s; no replica is reachable and was linked to its primary within "
                 "10 x downAfter of that: none promoted",
                 out->primary, why);
    else if (pdown)
        snprintf(out->elect_why, sizeof(out->elect_why),
                 "the primary %s is %s for %lld ms (downAfter %lld ms): %s elected with offset %lld (candidates: %s)",
                 out->primary, why, (long long)pdown, (long long)t->down_after_ms, t->m[best].name,
                 (long long)best_off, offs);
    else
        snprintf(out->elect_why, sizeof(out->elect_why),
                 "the primary %s is %s: %s elected with offset %lld (candidates: %s)", out->primary, why,
                 t->m[best].name, (long long)best_off, offs);
    return best;
}

/* ---- SWITCHOVER: the rollout ------------------------------------------------------------ */

/* SWITCHOVER (2): the best candidate to take the role from the primary P (a reachable
 * master, present or terminating) at ordinal pord, or -1 with the reason in why. */
static int switch_candidate(const member_t *m, int n, int pord, const member_t *P, const char *rev, int rollout,
                            char *why, size_t whylen)
{
    int best = -1;
    int64_t best_off = -1, poff = jsonx_int_or(P->obs, "offset", -1);
    char seen[600] = "";
    for (int i = 0; i < n; i++) {
        const member_t *x = &m[i];
        if (i == pord || !x->pod)
            continue;
        const char *no = !x->obs || !x->reachable      ? "unreachable"
                         : !pod_ready(x->pod)          ? "not Ready"
                         : !linked_to(x, P->ip)        ? "not linked to the primary"
                         : rollout && outdated(x, rev) ? "not on the new revision"
                         : poff - jsonx_int_or(x->obs, "offset", -1) > TOPO_SWITCHOVER_MAX_LAG ? "behind"
                                                                                               : NULL;
        size_t l = strlen(seen);
        snprintf(seen + l, sizeof(seen) - l, "%s%s %s", l ? ", " : "", x->name, no ? no : "caught up");
        if (no)
            continue;
        int64_t off = jsonx_int_or(x->obs, "offset", -1);
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
    BUF_FORMAT_VA(out->delete_why, sizeof(out->delete_why), fmt);
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

/* What a rollout step (SWITCHOVER (2), (3)) decides from: the primary P at pord, a
 * reachable master, present or terminating (dying), and a survey of the other pods. */
typedef struct {
    const member_t *m;
    int n, pord;
    const member_t *P;
    int dying;
    const char *rev;
    int keep;            /* SCALE-IN: roll->keep (0: none) */
    int present;         /* pods present */
    int ready;           /* every present pod Ready, reachable and linked to P (P: Ready, reachable) */
    int stale;           /* the outdated replica of highest ordinal, or -1 */
    int stuck;           /* the outdated replica not Ready of highest ordinal, or -1 */
    const char *awaited; /* the first pod not ready as above ("" a missing one), or NULL */
} roll_t;

static void roll_survey(roll_t *r)
{
    r->ready = 1;
    r->stale = r->stuck = -1;
    for (int i = 0; i < r->n; i++) {
        const member_t *x = &r->m[i];
        if (!x->pod) {
            r->awaited = r->awaited ? r->awaited : "";
            continue;
        }
        r->present++;
        int ok = pod_ready(x->pod) && x->obs && x->reachable && (i == r->pord || linked_to(x, r->P->ip));
        if (!ok && !r->awaited)
            r->awaited = x->name;
        r->ready &= ok;
        if (i != r->pord && outdated(x, r->rev)) {
            r->stale = i; /* the highest ordinal */
            if (!pod_ready(x->pod))
                r->stuck = i;
        }
    }
}

/* The rules of a rollout step, each a condition on the survey... */
static int nothing_to_roll(const roll_t *r)
{
    return !r->dying && r->stale < 0 && !outdated(r->P, r->rev);
}

static int unsettled(const roll_t *r)
{
    return r->present < r->n || !r->ready;
}

static int replica_stuck(const roll_t *r)
{
    return !r->dying && r->stuck >= 0 && unsettled(r);
}

static int replicas_awaited(const roll_t *r)
{
    return !r->dying && r->stale >= 0 && unsettled(r);
}

static int replica_stale(const roll_t *r)
{
    return !r->dying && r->stale >= 0;
}

static int alone(const roll_t *r)
{
    return r->n == 1;
}

static int always(const roll_t *r)
{
    (void)r;
    return 1;
}

/* ... and what it does. */
static void do_nothing(const roll_t *r, topo_t *out)
{
    (void)r, (void)out;
}

/* A replica of an old revision that is not Ready serves nothing, and waiting for it
 * would hold the rollout for ever (a revision that crashes, then fixed). */
static void delete_stuck(const roll_t *r, topo_t *out)
{
    delete_member(&r->m[r->stuck], out,
                  "rolling out revision %s: replica %s runs an old revision and is not Ready: restarted on the "
                  "new one",
                  r->rev, r->m[r->stuck].name);
}

static void wait_for_replicas(const roll_t *r, topo_t *out)
{
    int named = r->awaited && *r->awaited;
    out->switch_wait = 1;
    snprintf(out->switch_why, sizeof(out->switch_why),
             "rolling out: waiting for %s%s to be back, Ready and linked before restarting %s",
             named ? "pod " : "every pod", named ? r->awaited : "", r->m[r->stale].name);
}

static void delete_stale(const roll_t *r, topo_t *out)
{
    delete_member(&r->m[r->stale], out,
                  "rolling out revision %s: replica %s restarted (deleted; every replica linked to %s)", r->rev,
                  r->m[r->stale].name, r->P->name);
}

static void restart_alone(const roll_t *r, topo_t *out)
{
    if (r->dying)
        return; /* size 1 and terminating: nothing to hand over to, nothing to do */
    delete_member(r->P, out,
                  "rolling out revision %s: %s restarted in place (size 1: no replica to hand the primary role to)",
                  r->rev, r->P->name);
}

/* The primary role handed over (a record, then FAILOVER from it), or why not. */
static void hand_over(const roll_t *r, topo_t *out)
{
    char why[700];
    const char *what = r->dying ? "is being deleted" : "runs an old revision";
    int best = switch_candidate(r->m, r->n, r->pord, r->P, r->rev, !r->dying, why, sizeof(why));
    if (best >= 0) {
        out->switch_record = 1;
        snprintf(out->switch_to, sizeof(out->switch_to), "%s", r->m[best].name);
        snprintf(out->switch_why, sizeof(out->switch_why), "switchover: the primary %s %s: %s takes its role: %s",
                 r->P->name, what, r->m[best].name, why);
        return;
    }
    /* A replica still coming back is worth waiting for; none there at all is not. */
    int any = 0;
    for (int i = 0; i < r->n; i++)
        any |= i != r->pord && r->m[i].pod && linked_to(&r->m[i], r->P->ip);
    if (any)
        out->switch_wait = 1;
    else
        out->switch_blocked = 1;
    snprintf(out->switch_why, sizeof(out->switch_why), "the primary %s %s, but no replica can take its role (%s)%s",
             r->P->name, what, why, any ? ": waiting" : ": no switchover");
}

/* SCALE-IN: the primary stands among the pods that are to go (ordinals >= keep). */
static int primary_leaving(const roll_t *r)
{
    return r->keep > 0 && r->pord >= r->keep && !r->dying;
}

/* SCALE-IN: the primary role handed over to a pod that stays (a record, then FAILOVER
 * from it), or why not. */
static void hand_over_leaving(const roll_t *r, topo_t *out)
{
    char why[700];
    int best = switch_candidate(r->m, r->keep, r->pord, r->P, r->rev, 0, why, sizeof(why));
    if (best >= 0) {
        out->switch_record = 1;
        snprintf(out->switch_to, sizeof(out->switch_to), "%s", r->m[best].name);
        snprintf(out->switch_why, sizeof(out->switch_why),
                 "scaling in to %d pods: the primary %s is to go: %s takes its role first: %s", r->keep, r->P->name,
                 r->m[best].name, why);
        return;
    }
    int any = 0;
    for (int i = 0; i < r->keep; i++)
        any |= r->m[i].pod && linked_to(&r->m[i], r->P->ip);
    if (any)
        out->switch_wait = 1;
    else
        out->switch_blocked = 1;
    snprintf(out->switch_why, sizeof(out->switch_why),
             "scaling in to %d pods: the primary %s is to go, but no replica that stays can take its role (%s)%s",
             r->keep, r->P->name, why, any ? ": waiting" : ": not scaling in");
}

/* SWITCHOVER (2) and (3) in topology.h, in order: the first rule whose condition holds
 * decides the step. */
static const struct {
    int (*when)(const roll_t *);
    void (*then)(const roll_t *, topo_t *);
} roll_rules[] = {
    {primary_leaving, hand_over_leaving},  /* SCALE-IN: the primary among the pods to go */
    {nothing_to_roll, do_nothing},         /* no outdated pod, the primary up to date */
    {replica_stuck, delete_stuck},         /* an outdated replica not Ready, others awaited */
    {replicas_awaited, wait_for_replicas}, /* an outdated replica; a pod absent, not Ready or not linked */
    {replica_stale, delete_stale},         /* every pod back and linked: the next outdated replica */
    {alone, restart_alone},                /* size 1: no replica to hand the role to */
    {always, hand_over},                   /* the primary itself (outdated or terminating) */
};

static void rollout_step(const member_t *m, int n, int pord, const member_t *P, int dying, const char *rev,
                         int keep, topo_t *out)
{
    /* SCALE-IN: the pods that are to go are not rolled */
    roll_t r = {.m = m, .n = keep > 0 && keep < n && pord < keep ? keep : n, .pord = pord, .P = P, .dying = dying,
                .rev = rev, .keep = keep > 0 && keep < n ? keep : 0};
    roll_survey(&r);
    for (size_t i = 0; i < sizeof(roll_rules) / sizeof(roll_rules[0]); i++)
        if (roll_rules[i].when(&r)) {
            roll_rules[i].then(&r, out);
            return;
        }
}

/* ---- The steps of topo_compute_switchover ------------------------------------------------ */

/* 1 when the old primary O already handed the role to the designated P: a reachable
 * replica of P's IP while P does not yet report role master. */
static int handed_over(const member_t *O, const member_t *P)
{
    const char *mh = master_host(O);
    return answers_as(O, "slave") && P->ip && mh && !strcmp(mh, P->ip) && !is_master(P);
}

/* SWITCHOVER (1): a handover recorded, from O (present or terminating) to P. */
static void handover_step(tctx_t *t, topo_t *out)
{
    int oord = t->roll ? ordinal_of(t->name, t->size, t->roll->switchover_from) : -1;
    const member_t *O = oord < 0 || oord == t->pord ? NULL : t->m[oord].pod ? &t->m[oord] : &t->dying[oord];
    t->O = O;
    if (!O)
        return;
    if (!t->obs) { /* nothing known of Redis now: the record stays as it is */
        snprintf(out->switchover_from, sizeof(out->switchover_from), "%s", t->roll->switchover_from);
        return;
    }
    t->handing = is_master(O) && linked_to(&t->m[t->pord], O->ip);
    t->switching = t->handing || handed_over(O, &t->m[t->pord]);
    if (t->switching)
        snprintf(out->switchover_from, sizeof(out->switchover_from), "%s", O->name);
}

/* FAILOVER: the designated primary's evidence is read by name, whatever the IP: a
 * deleted pod's last node, or its successor's (never answered: down since first
 * probed). */
static void failover_step(tctx_t *t, topo_t *out)
{
    if (!t->obs || t->down_after_ms <= 0 || t->switching)
        return;
    int winner = elect(t, obs_node(t->obs, out->primary), out);
    if (winner < 0) {
        out->no_candidate = 1;
    } else if (winner != t->pord) {
        out->elect = 1;
        snprintf(out->elected, sizeof(out->elected), "%s", t->m[winner].name);
    }
}

/* SWITCHOVER (2), (3): the primary a reachable master, present or terminating; (4):
 * no node of the set answers. Only when the failover rules leave the primary as it is. */
static void roll_step(tctx_t *t, topo_t *out)
{
    const member_t *D = t->m[t->pord].pod ? &t->m[t->pord] : &t->dying[t->pord];
    if (!t->obs || !t->roll || out->elect || t->switching)
        return;
    if (!out->no_candidate && !out->recheck_after_ms && is_master(D))
        rollout_step(t->m, t->n_members, t->pord, D, D == &t->dying[t->pord], t->rev, t->roll->keep, out);
    else if (*t->rev && out->no_candidate && !any_reachable(t->m, t->dying, t->n_members))
        blind_step(t->m, t->n_members, t->rev, out);
}

static void add_label(topo_t *out, const member_t *x, const char *role)
{
    topo_label_t *l = &out->labels[out->n_labels++];
    snprintf(l->pod, sizeof(l->pod), "%s", x->name);
    l->role = role;
    l->have = x->label ? x->label : "";
}

/* 1 when x carries role=primary. */
static int labelled_primary(const member_t *x)
{
    return x->label && !strcmp(x->label, "primary");
}

/* Role labels: they follow the designation, so the -primary Service never selects a pod
 * that only claims to be a primary (a restarted replica comes up as one). The designated
 * primary is labelled primary only once it is one: observed a master (during a handover,
 * once it reports role master), or promoted by this plan (the label comes after the
 * command); with nothing known of Redis, not at all. No other pod keeps role=primary,
 * terminating ones included (a primary whose pod is being deleted while another was
 * elected); and the plan that gives the label takes it from every other pod whatever the
 * pod cache says of them: the cache may not hold this operator's own last label patches
 * yet. A terminating pod is otherwise left as it is (the designated primary's own keeps
 * its label until a handover takes it). */
static void label_step(tctx_t *t, topo_t *out)
{
    if (out->elect || out->switch_record)
        return;
    const member_t *P = &t->m[t->pord];
    int give = P->pod && !t->switching && (is_master(P) || t->promote) && !labelled_primary(P);
    for (int i = 0; i < 2 * t->n_members; i++) {
        const member_t *x = i < t->n_members ? &t->m[i] : &t->dying[i - t->n_members];
        int dying = i >= t->n_members;
        if (!x->pod || x == P || (dying && i - t->n_members == t->pord))
            continue;
        if (labelled_primary(x) || give || (!dying && (!x->label || strcmp(x->label, "replica"))))
            add_label(out, x, "replica");
    }
    if (give)
        add_label(out, P, "primary");
}

/* FAILOVER: the designated primary elected while a replica: promote it, alone. */
static void promote_step(tctx_t *t, topo_t *out)
{
    const member_t *P = &t->m[t->pord];
    t->primary_ok = is_master(P);
    t->promote = t->obs && t->down_after_ms > 0 && !out->elect && !out->no_candidate && !t->switching &&
                 answers_as(P, "slave") && P->ip && *P->ip;
}

/* A Redis command on pod x: REPLICAOF (or FAILOVER TO) primary_ip 6379. */
static topo_cmd_t *add_cmd(topo_t *out, const member_t *x, const char *primary_ip)
{
    topo_cmd_t *c = &out->cmds[out->n_cmds++];
    snprintf(c->pod, sizeof(c->pod), "%s", x->name);
    snprintf(c->ip, sizeof(c->ip), "%s", x->ip);
    snprintf(c->primary_ip, sizeof(c->primary_ip), "%s", primary_ip ? primary_ip : "");
    return c;
}

/* status.nodes[] for pod x (ordinal i). */
static topo_node_t *add_node(tctx_t *t, const member_t *x, int i, topo_t *out)
{
    topo_node_t *nd = &out->nodes[out->n_nodes++];
    snprintf(nd->pod, sizeof(nd->pod), "%s", x->name);
    snprintf(nd->ip, sizeof(nd->ip), "%s", x->ip ? x->ip : "");
    nd->offset = x->obs && x->reachable ? jsonx_int_or(x->obs, "offset", -1) : -1;
    nd->lag_bytes = i == t->pord && t->primary_ok ? 0 : -1;
    nd->role = !x->reachable ? "unknown" : !strcmp(x->role, "master") ? "primary"
                                         : !strcmp(x->role, "slave")  ? "replica"
                                                                      : "unknown";
    nd->link_up = (x->reachable && !strcmp(x->role, "master")) || (x->obs && jsonx_true(x->obs, "linkUp"));
    return nd;
}

/* A node other than the primary: it follows the primary (its lag, linked or link down),
 * or gets REPLICAOF the primary unless hold (a decision pending) or nothing is known. */
static void follow_or_repoint(tctx_t *t, const member_t *x, topo_node_t *nd, int hold, int64_t poffset,
                              topo_t *out)
{
    const member_t *P = &t->m[t->pord];
    if (!x->reachable) {
        list_add(t->unreachable, sizeof(t->unreachable), x->name);
        return;
    }
    const char *mh = master_host(x);
    int64_t mp = jsonx_int_or(x->obs, "masterPort", 0);
    int follows = !strcmp(x->role, "slave") && mh && P->ip && !strcmp(mh, P->ip) && mp == TOPO_REDIS_PORT;
    if (follows && nd->offset >= 0 && poffset >= 0)
        nd->lag_bytes = poffset > nd->offset ? poffset - nd->offset : 0;
    if (hold || !(t->primary_ok || t->promote) || !*x->role || follows) {
        if (follows && nd->link_up)
            t->linked++;
        else if (follows)
            list_add(t->linkdown, sizeof(t->linkdown), x->name);
        return;
    }
    topo_cmd_t *c = add_cmd(out, x, P->ip);
    if (!strcmp(x->role, "master"))
        snprintf(c->why, sizeof(c->why), "%s is a primary too (two primaries): demoted to a replica of %s (%s:%d)",
                 x->name, P->name, P->ip, TOPO_REDIS_PORT);
    else
        snprintf(c->why, sizeof(c->why), "%s follows %s:%lld, not the primary %s (%s:%d): repointed", x->name,
                 mh && *mh ? mh : "(none)", (long long)mp, P->name, P->ip, TOPO_REDIS_PORT);
}

/* The Redis commands (FAILOVER TO of a handover, REPLICAOF NO ONE of a promotion, the
 * REPLICAOF of every node that follows another primary) and status.nodes; the health
 * counts into t. */
static void command_step(tctx_t *t, topo_t *out)
{
    const member_t *P = &t->m[t->pord], *O = t->O;
    if (t->handing) {
        topo_cmd_t *c = add_cmd(out, O, P->ip);
        c->failover_to = 1;
        snprintf(c->why, sizeof(c->why),
                 "switchover: %s hands the primary role to %s (FAILOVER TO %s %d: writes paused until %s has "
                 "every write, at most %d ms)",
                 O->name, P->name, P->ip, TOPO_REDIS_PORT, P->name, TOPO_FAILOVER_TIMEOUT_MS);
    }
    /* With the promotion go the other nodes' REPLICAOF to it, in the same plan and
     * before it: a replica left following the old primary's address would follow it
     * again if it came back (at the same address, with its data), giving it the replica
     * min-replicas-to-write asks for beside the promoted one. Stopped anywhere (a
     * command fails, the worker dies or is stopped for long), the plan leaves one
     * master: the replicas told so far follow the elected one, itself still a replica
     * of the old address (Redis serves them once it is promoted: -NOMASTERLINK until
     * then), or the elected one promoted with every other replica following it. */
    int hold = out->elect || out->no_candidate || t->switching || out->switch_record;
    int64_t poffset = t->primary_ok ? jsonx_int_or(P->obs, "offset", -1) : -1;
    for (int i = 0; i < t->n_members; i++) {
        const member_t *x = &t->m[i];
        if (!x->pod)
            continue;
        topo_node_t *nd = add_node(t, x, i, out);
        if (i != t->pord)
            follow_or_repoint(t, x, nd, hold, poffset, out);
    }
    if (t->promote) {
        topo_cmd_t *c = add_cmd(out, P, NULL);
        c->no_one = 1;
        snprintf(c->why, sizeof(c->why), "%s promoted to primary (REPLICAOF NO ONE): %s", P->name, out->elect_why);
    }
}

/* ReplicationHealthy's reason and message: the first that applies. */
static void health_step(tctx_t *t, topo_t *out)
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
    else if (!answers(P))
        add_msg(out, "PrimaryUnreachable", "the primary %s is not reachable%s; no replica is promoted here",
                out->primary, "");
    else if (!t->primary_ok)
        add_msg(out, "NoPrimary",
                "the designated primary %s does not report role master (%s); no primary is elected here",
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

/* What the caller records: the elected primary, or the switchover's new primary with the
 * old one as switchoverFrom. */
static void record_step(tctx_t *t, topo_t *out)
{
    (void)t;
    if (out->elect)
        snprintf(out->primary, sizeof(out->primary), "%s", out->elected);
    if (out->switch_record) {
        snprintf(out->switchover_from, sizeof(out->switchover_from), "%s", out->primary);
        snprintf(out->primary, sizeof(out->primary), "%s", out->switch_to);
    }
}

/* The steps, in topology.h's order. */
static void (*const steps[])(tctx_t *, topo_t *) = {
    handover_step, failover_step, roll_step, promote_step, label_step, command_step, health_step, record_step,
};

int topo_ordinal(const char *name, int size, const char *pod)
{
    return name && pod ? ordinal_of(name, size, pod) : -1;
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

void topo_compute_switchover(const char *name, int size, const char *status_primary, const json_object *pods,
                             const json_object *observation, int64_t down_after_ms, int64_t obs_age_ms,
                             const topo_roll_t *roll, topo_t *out)
{
    tctx_t tc;
    memset(&tc, 0, sizeof(tc));
    memset(out, 0, sizeof(*out));
    tc.name = name;
    tc.size = size;
    tc.n_members = size < TOPO_MAX_NODES ? size : TOPO_MAX_NODES;
    tc.obs = jsonx_typed(observation, json_type_object);
    out->observed = tc.obs != NULL;
    tc.down_after_ms = down_after_ms;
    tc.obs_age_ms = obs_age_ms;
    tc.roll = roll;
    tc.rev = roll && roll->update_revision ? roll->update_revision : "";
    tc.pord = ordinal_of(name, size, status_primary);
    if (tc.pord < 0)
        tc.pord = 0;
    snprintf(out->primary, sizeof(out->primary), "%s-%d", name, tc.pord);
    collect_members(&tc, pods);
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
        steps[i](&tc, out);
}
