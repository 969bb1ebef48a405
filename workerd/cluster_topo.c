/* cluster_topo: the pure decisions of a RedisCluster in mode Cluster. See cluster_topo.h. */
#include "cluster_topo.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* What the decisions share. */
typedef struct {
    const ctopo_input_t *in;
    ctopo_result_t *out;
    int n;                          /* pods of the layout */
    const char *id[CTOPO_MAX_PODS]; /* each observed pod's node id, NULL when unknown */
    const cn_node_t *me[CTOPO_MAX_PODS]; /* its own line (myself) */
    int all_observed;               /* every pod present and observed */
    int anchor;                     /* -1 when none is observed */
    /* Slot ownership as the cluster agrees on it (owners): for each slot the node whose
     * claim has the highest config epoch in any view (Redis's own rule), as the pod of
     * the layout it is (-1: a node of no pod, e.g. a lost one), and set when any view
     * gives the slot to anyone. A node's own claim does not outweigh the cluster's: a
     * pod back without nodes.conf but with its AOF claims the slots of its keys by
     * itself, with epoch 0. */
    short *owner;                   /* [CN_SLOTS] */
    int holds[CTOPO_MAX_PODS];      /* slots each pod holds by that agreement */
    int per;                        /* pods per shard in the layout (width) */
    int wanted[CTOPO_MAX_PODS];     /* in the spec's layout (else LEAVING) */
    int retired[CTOPO_MAX_PODS];    /* leaving, holding nothing, knowing only itself */
} ctx_t;

const char *ctopo_cmd_kind_name(ctopo_cmd_kind_t kind)
{
    static const char *const names[] = {"meet",  "forget",   "addslots", "replicate", "failover",
                                        "flush", "delslots", "reset",    "epoch"};
    return (unsigned)kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "unknown";
}

/* k * 16384 / shards rounded to the nearest slot, as redis-cli --cluster create splits */
static int range_start(int shards, int k)
{
    return (2 * k * CN_SLOTS + shards) / (2 * shards);
}

void ctopo_shard_range(int shards, int k, int *from, int *to)
{
    *from = range_start(shards, k);
    *to = range_start(shards, k + 1) - 1;
}

static int shard_of(const ctx_t *c, int i)
{
    return i / c->per;
}

/* Add a command for pod; args are its argv after "CLUSTER". Returns it, or NULL when the
 * plan is full (the rest is the next reconcile's). */
static ctopo_cmd_t *add_cmd(ctx_t *c, ctopo_cmd_kind_t kind, int pod, const char *why, ...)
    __attribute__((format(printf, 4, 5)));
static ctopo_cmd_t *add_cmd(ctx_t *c, ctopo_cmd_kind_t kind, int pod, const char *why, ...)
{
    if (c->out->ncmds >= CTOPO_MAX_CMDS)
        return NULL;
    ctopo_cmd_t *cmd = &c->out->cmd[c->out->ncmds++];
    memset(cmd, 0, sizeof(*cmd));
    cmd->kind = kind;
    cmd->pod = pod;
    snprintf(cmd->argv[cmd->argc++], sizeof(cmd->argv[0]), "%s", kind == CTOPO_FLUSH ? "FLUSHALL" : "CLUSTER");
    va_list ap;
    va_start(ap, why);
    vsnprintf(cmd->why, sizeof(cmd->why), why, ap);
    va_end(ap);
    return cmd;
}

static void add_arg(ctopo_cmd_t *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_arg(ctopo_cmd_t *cmd, const char *fmt, ...)
{
    if (!cmd || cmd->argc >= CTOPO_MAX_ARGS)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd->argv[cmd->argc++], sizeof(cmd->argv[0]), fmt, ap);
    va_end(ap);
}

static void problem(ctx_t *c, int degraded, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void problem(ctx_t *c, int degraded, const char *reason, const char *fmt, ...)
{
    ctopo_result_t *o = c->out;
    if (o->reason[0]) /* the first problem is the one told */
        return;
    snprintf(o->reason, sizeof(o->reason), "%s", reason);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->message, sizeof(o->message), fmt, ap);
    va_end(ap);
    o->degraded = degraded;
}

/* The pod whose node has id, or -1. */
static int pod_of_id(const ctx_t *c, const char *id)
{
    for (int i = 0; id && *id && i < c->n; i++)
        if (c->id[i] && !strcmp(c->id[i], id))
            return i;
    return -1;
}

/* How many of the layout's observed nodes view v knows at their pod's IP. */
static int known_in(const ctx_t *c, const cn_view_t *v)
{
    int k = 0;
    for (int i = 0; i < c->n; i++) {
        const cn_node_t *e = c->id[i] && !c->retired[i] ? cn_find(v, c->id[i]) : NULL;
        /* (a node's own line may show no address before it learnt it) */
        k += e && ((e->flags & CN_MYSELF) || !strcmp(e->ip, c->in->pod[i].ip));
    }
    return k;
}

/* How many observed nodes know node i at its pod's IP (itself included). */
static int known_by(const ctx_t *c, int i)
{
    int k = 0;
    for (int j = 0; c->id[i] && j < c->n; j++) {
        const cn_node_t *e = c->me[j] && !c->retired[j] ? cn_find(c->in->pod[j].view, c->id[i]) : NULL;
        k += e && ((e->flags & CN_MYSELF) || !strcmp(e->ip, c->in->pod[i].ip));
    }
    return k;
}

/* Each pod's node, whether it is wanted, and whether every pod is observed. The anchor
 * (pick_anchor): the observed node that knows the most nodes of the layout and is known
 * by the most (the best connected: a pod back alone with a new IP knows everyone but
 * nobody knows it), ties to the lowest index; retired pods are not counted. */
static void gather(ctx_t *c)
{
    c->all_observed = 1;
    for (int i = 0; i < c->n; i++) {
        const ctopo_pod_t *p = &c->in->pod[i];
        c->wanted[i] = shard_of(c, i) < c->in->shards && i % c->per < 1 + c->in->replicas;
        c->me[i] = p->observed ? cn_myself(p->view) : NULL;
        c->id[i] = c->me[i] ? c->me[i]->id : NULL;
        /* every wanted pod, and every leaving one still there (its node may hold slots) */
        if (c->wanted[i] || p->present)
            c->all_observed &= p->present && c->me[i] != NULL;
        c->out->label[i] = NULL;
    }
}

/* The anchor: as gather's comment says, once retired pods are known (after slot_maps). */
static void pick_anchor(ctx_t *c)
{
    c->anchor = -1;
    int best = -1;
    for (int i = 0; i < c->n; i++) {
        int k = c->id[i] && !c->retired[i] ? known_in(c, c->in->pod[i].view) + known_by(c, i) : -1;
        if (k > best) {
            best = k;
            c->anchor = c->id[i] ? i : -1;
        }
    }
}

/* ---- 1. MEET --------------------------------------------------------------------------- */

/* 1 when view has a node in handshake with ip. */
static int handshake_with(const cn_view_t *v, const char *ip)
{
    for (size_t i = 0; v && i < v->n; i++)
        if ((v->nodes[i].flags & CN_HANDSHAKE) && !strcmp(v->nodes[i].ip, ip))
            return 1;
    return 0;
}

/* Two nodes that both restarted at new addresses can each hold the other flagged noaddr
 * for good: a node with no address for a peer never pings it, so neither tells the other
 * where it is, and gossip does not heal it (Redis takes a peer's address from gossip only
 * for a node it flags failing). The node that lacks the address then never hears of the
 * slots its peer took meanwhile (seen in the fault soak: a replica with cluster_state
 * fail, its shard's new master "slave,noaddr" in its view, while every other node was ok).
 * A MEET at the peer's address from that node heals it: the handshake meets a node it
 * already knows and takes its address. Not counted as pending: it blocks no other step
 * (a partition would make it repeat). */
static void step_remeet(ctx_t *c)
{
    for (int j = 0; j < c->n; j++) {
        const cn_view_t *v = c->in->pod[j].view;
        if (j == c->anchor || !c->me[j] || c->retired[j])
            continue;
        for (int i = 0; i < c->n; i++) {
            const ctopo_pod_t *p = &c->in->pod[i];
            const cn_node_t *e = c->id[i] && i != j ? cn_find(v, c->id[i]) : NULL;
            if (!e || !(e->flags & CN_NOADDR) || !p->ip[0] || !p->present || p->terminating ||
                handshake_with(v, p->ip))
                continue;
            ctopo_cmd_t *cmd = add_cmd(c, CTOPO_MEET, j, "node %.12s (pod %s) is noaddr for pod %s", c->id[i],
                                       p->pod, c->in->pod[j].pod);
            add_arg(cmd, "MEET");
            add_arg(cmd, "%s", p->ip);
            add_arg(cmd, "%d", CTOPO_PORT);
        }
    }
}

/* Returns how many nodes are not yet met (MEET sent now or under way). */
static int step_meet(ctx_t *c)
{
    if (c->anchor < 0)
        return 0;
    const cn_view_t *av = c->in->pod[c->anchor].view;
    int pending = 0;
    for (int i = 0; i < c->n; i++) {
        if (i == c->anchor || !c->id[i] || c->retired[i])
            continue;
        const cn_node_t *e = cn_find(av, c->id[i]);
        if (e && !strcmp(e->ip, c->in->pod[i].ip))
            continue;
        pending++;
        if (handshake_with(av, c->in->pod[i].ip))
            continue;
        ctopo_cmd_t *cmd = add_cmd(c, CTOPO_MEET, c->anchor, "node %.12s (pod %s) is %s %s", c->id[i],
                                   c->in->pod[i].pod, e ? "known at an old address" : "not known to",
                                   e ? e->ip : c->in->pod[c->anchor].pod);
        add_arg(cmd, "MEET");
        add_arg(cmd, "%s", c->in->pod[i].ip);
        add_arg(cmd, "%d", CTOPO_PORT);
    }
    step_remeet(c);
    return pending;
}

/* ---- 2. FORGET ------------------------------------------------------------------------- */

/* 1 when id is the master some observed node's own line follows. */
static int someones_master(const ctx_t *c, const char *id)
{
    for (int i = 0; i < c->n; i++)
        if (c->me[i] && !strcmp(c->me[i]->master, id))
            return 1;
    return 0;
}

/* 1 when some observed view gives the node id slots (or open slots). */
static int holds_anywhere(const ctx_t *c, const char *id)
{
    for (int i = 0; i < c->n; i++) {
        const cn_node_t *e = c->in->pod[i].observed ? cn_find(c->in->pod[i].view, id) : NULL;
        if (e && (e->nranges || e->nopen))
            return 1;
    }
    return 0;
}

/* 1 when entry e (of some view) is a node to forget. */
static int forgettable(const ctx_t *c, const cn_node_t *e)
{
    return pod_of_id(c, e->id) < 0 && !(e->flags & CN_HANDSHAKE) && (e->flags & (CN_FAIL | CN_NOADDR)) &&
           !holds_anywhere(c, e->id) && !someones_master(c, e->id);
}

static int step_forget(ctx_t *c)
{
    if (!c->all_observed)
        return 0;
    int sent = 0;
    for (int i = 0; i < c->n; i++) {
        const cn_view_t *v = c->in->pod[i].view;
        for (size_t k = 0; v && !c->retired[i] && k < v->n; k++) {
            const cn_node_t *e = &v->nodes[k];
            if (!forgettable(c, e))
                continue;
            /* on every node that lists it (Redis wants them all within a minute) */
            for (int m = 0; m < c->n; m++) {
                if (c->retired[m] || !c->in->pod[m].view || !cn_find(c->in->pod[m].view, e->id))
                    continue;
                int dup = 0;
                for (size_t x = 0; x < c->out->ncmds; x++)
                    dup |= c->out->cmd[x].pod == m && !strcmp(c->out->cmd[x].argv[2], e->id);
                if (dup)
                    continue;
                ctopo_cmd_t *cmd = add_cmd(c, CTOPO_FORGET, m, "node %.12s is gone (%s, no slot, no pod of the "
                                           "cluster has it)", e->id, e->flags & CN_FAIL ? "fail" : "noaddr");
                add_arg(cmd, "FORGET");
                add_arg(cmd, "%s", e->id);
                sent++;
            }
        }
    }
    return sent;
}

/* 1 when master e (of some view) is gone for good while the cluster may not know it: its
 * address answers with another id (flagged noaddr, not failed), or an observed pod at
 * its address is another node (the pod came back without nodes.conf before the gossip
 * noticed). */
static int replaced(const ctx_t *c, const cn_node_t *e)
{
    if (!e || (e->flags & CN_FAIL))
        return 0;
    if (e->flags & CN_NOADDR)
        return 1;
    for (int i = 0; e->ip[0] && i < c->n; i++)
        if (c->id[i] && strcmp(c->id[i], e->id) && !strcmp(c->in->pod[i].ip, e->ip))
            return 1;
    return 0;
}

/* ---- 2b. ORPHANED SHARDS ---------------------------------------------------------------- */

/* Redis Cluster never fails over a master it flags noaddr without fail: a node that
 * answered at the master's address with another id (its pod came back without nodes.conf
 * before the failure was agreed) makes every node drop the address, and clusterCron skips
 * noaddr nodes when it looks for failures. That master is gone for good (its address runs
 * another identity: replaced()), so its best replica takes over with CLUSTER FAILOVER
 * FORCE, as soon as the operator sees it: the masters still vote (FORCE only skips the
 * handshake with the dead master). */
static int step_orphaned(ctx_t *c)
{
    int sent = 0;
    for (int k = 0; k < c->out->nshards; k++) {
        int best = -1;
        for (int i = k * c->per; i < (k + 1) * c->per; i++) {
            const cn_node_t *me = c->me[i];
            const ctopo_pod_t *p = &c->in->pod[i];
            if (!me || !(me->flags & CN_REPLICA) || !p->present || p->terminating || pod_of_id(c, me->master) >= 0)
                continue;
            if (!replaced(c, cn_find(p->view, me->master)) || !holds_anywhere(c, me->master))
                continue;
            if (best < 0 || p->offset > c->in->pod[best].offset)
                best = i;
        }
        if (best < 0)
            continue;
        ctopo_cmd_t *cmd = add_cmd(c, CTOPO_FAILOVER, best, "master %.12s of shard %d is gone (its address answers "
                                   "with another id) and Redis may never fail it over: %s takes its role",
                                   c->me[best]->master, k, c->in->pod[best].pod);
        add_arg(cmd, "FAILOVER");
        add_arg(cmd, "FORCE");
        if (cmd) /* checked again by the executor right before FORCE */
            snprintf(cmd->gone, sizeof(cmd->gone), "%s", c->me[best]->master);
        /* every other replica of that master in the shard, whether its own look shows the
         * master replaced yet or not (a look older than another's: finding 11) */
        for (int j = k * c->per; cmd && j < (k + 1) * c->per && cmd->npeers < 1 + CTOPO_MAX_REPLICAS; j++)
            if (j != best && c->me[j] && (c->me[j]->flags & CN_REPLICA) && c->in->pod[j].present &&
                !strcmp(c->me[j]->master, c->me[best]->master))
                cmd->peer[cmd->npeers++] = j;
        sent++;
    }
    return sent;
}

/* ---- 3. SLOTS -------------------------------------------------------------------------- */

/* The slots any view attributes to any node (claimed), and those an observed master of
 * the layout holds as the cluster agrees (held), with c->owner and c->holds. */
static void slot_maps(ctx_t *c, cn_slots_t *claimed, cn_slots_t *held)
{
    static uint64_t epoch[CN_SLOTS];
    memset(claimed, 0, sizeof(*claimed));
    memset(held, 0, sizeof(*held));
    for (int slot = 0; slot < CN_SLOTS; slot++)
        c->owner[slot] = -2; /* nobody */
    for (int i = 0; i < c->n; i++) {
        const cn_view_t *v = c->in->pod[i].observed ? c->in->pod[i].view : NULL;
        for (size_t k = 0; v && k < v->n; k++) {
            const cn_node_t *e = &v->nodes[k];
            int pod = pod_of_id(c, e->id);
            for (size_t r = 0; r < e->nranges; r++)
                for (int slot = e->ranges[r].from; slot <= e->ranges[r].to; slot++) {
                    if (c->owner[slot] != -2 && e->config_epoch <= epoch[slot])
                        continue;
                    c->owner[slot] = (short)pod;
                    epoch[slot] = e->config_epoch;
                    cn_slots_set(claimed, slot);
                }
        }
    }
    memset(c->holds, 0, sizeof(c->holds));
    for (int slot = 0; slot < CN_SLOTS; slot++) {
        int p = c->owner[slot];
        if (p >= 0 && c->me[p] && (c->me[p]->flags & CN_MASTER)) {
            c->holds[p]++;
            cn_slots_set(held, slot);
        }
    }
    for (int i = 0; i < c->n; i++)
        c->retired[i] = !c->wanted[i] && c->me[i] && c->in->pod[i].view->n == 1 && !c->holds[i] &&
                        !c->me[i]->nranges && !c->me[i]->nopen;
}

/* Shard k's master: the one observed pod of the shard that is a master holding slots (as
 * the cluster agrees); -1 when none, -2 when two. */
static int shard_master(const ctx_t *c, int k)
{
    int m = -1, per = c->per;
    for (int i = k * per; i < (k + 1) * per; i++)
        if (c->holds[i] > 0)
            m = m == -1 ? i : -2;
    return m;
}

/* The pod of shard k to give unassigned slots: its master, else its first empty master. */
static int slots_target(const ctx_t *c, int k)
{
    int m = shard_master(c, k), per = c->per;
    if (m != -1)
        return m;
    for (int i = k * per; i < (k + 1) * per; i++)
        if (c->wanted[i] && c->me[i] && (c->me[i]->flags & CN_MASTER) && cn_slot_count(c->me[i]) == 0 &&
            c->holds[i] == 0)
            return i;
    return -1;
}

/* How many observed pods follow pod m's node. */
static int followers(const ctx_t *c, int m)
{
    int n = 0;
    for (int i = 0; i < c->n; i++)
        n += c->me[i] && (c->me[i]->flags & CN_REPLICA) && !strcmp(c->me[i]->master, c->id[m]);
    return n;
}

/* Shard k's HEAD: its master holding slots (-2 when two); in a bootstrapped cluster, for
 * a wanted shard that holds none, its SEED: the observed wanted empty master of the shard
 * that most of its pods follow, ties to the lowest index. -1 when none. */
static int shard_head(const ctx_t *c, int k)
{
    int m = shard_master(c, k), best = -1, most = -1;
    if (m != -1 || !c->in->bootstrapped || k >= c->in->shards)
        return m;
    /* A shard whose master is gone but holds slots still (Redis, or 2b, promotes one of
     * its replicas): no seed. An empty master made its head would take the replicas,
     * the only copies of the shard's data, away from it. */
    for (int i = k * c->per; i < (k + 1) * c->per; i++)
        if (c->me[i] && (c->me[i]->flags & CN_REPLICA) && pod_of_id(c, c->me[i]->master) < 0 &&
            holds_anywhere(c, c->me[i]->master))
            return -1;
    for (int i = k * c->per; i < (k + 1) * c->per; i++) {
        const cn_node_t *me = c->me[i];
        /* (slots IMPORTING are fine: a seed in the middle of its first move) */
        if (!c->wanted[i] || !me || !(me->flags & CN_MASTER) || me->nranges || c->holds[i])
            continue;
        int f = followers(c, i);
        if (f > most) {
            most = f;
            best = i;
        }
    }
    return best;
}

/* 1 when every observed node knows every other (the MEETs have spread). */
static int fully_met(const ctx_t *c)
{
    int live = 0;
    for (int i = 0; i < c->n; i++)
        live += c->id[i] && !c->retired[i];
    for (int i = 0; i < c->n; i++)
        if (c->id[i] && !c->retired[i] && known_in(c, c->in->pod[i].view) < live)
            return 0;
    return 1;
}

static int step_slots(ctx_t *c, const cn_slots_t *claimed)
{
    if (c->in->bootstrapped || !c->all_observed || !fully_met(c))
        return 0;
    int sent = 0;
    for (int k = 0; k < c->in->shards; k++) {
        int from, to, t = slots_target(c, k);
        cn_range_t r[CTOPO_MAX_RANGES];
        ctopo_shard_range(c->in->shards, k, &from, &to);
        size_t n = cn_slots_ranges(claimed, from, to, 0, r, CTOPO_MAX_RANGES);
        if (!n || t < 0)
            continue;
        n = n < CTOPO_MAX_RANGES ? n : CTOPO_MAX_RANGES;
        char text[256];
        cn_ranges_text(r, n, text, sizeof(text));
        ctopo_cmd_t *cmd = add_cmd(c, CTOPO_ADDSLOTS, t, "shard %d: slots %s were never assigned (bootstrap)", k,
                                   text);
        add_arg(cmd, "ADDSLOTSRANGE");
        for (size_t i = 0; i < n; i++) {
            add_arg(cmd, "%d", r[i].from);
            add_arg(cmd, "%d", r[i].to);
        }
        sent++;
    }
    return sent;
}

/* ---- 4. REPLICATE ---------------------------------------------------------------------- */

/* Ahead of REPLICATE on pod i, a master the cluster gives no slot: FLUSHALL (Redis
 * refuses to make a master with keys a replica; its keys are stale copies of slots its
 * shard's master m serves), and CLUSTER DELSLOTSRANGE of the slots it claims by itself
 * (Redis refuses a master that believes it has slots; the cluster gives them to others). */
static void unclaim(ctx_t *c, int i, int k, int m)
{
    const cn_node_t *me = c->me[i];
    add_cmd(c, CTOPO_FLUSH, i, "pod %s holds no slot: its keys (if any) are stale copies of shard %d, which %s serves",
            c->in->pod[i].pod, k, c->in->pod[m].pod);
    if (!me->nranges)
        return;
    ctopo_cmd_t *cmd = add_cmd(c, CTOPO_DELSLOTS, i, "pod %s claims %d slot(s) by itself that the cluster gives "
                               "to others (back without nodes.conf, with its AOF)", c->in->pod[i].pod,
                               cn_slot_count(me));
    add_arg(cmd, "DELSLOTSRANGE");
    for (size_t r = 0; r < me->nranges && r < CTOPO_MAX_RANGES; r++) {
        add_arg(cmd, "%d", me->ranges[r].from);
        add_arg(cmd, "%d", me->ranges[r].to);
    }
}

static int step_replicate(ctx_t *c)
{
    int sent = 0, per = c->per;
    for (int k = 0; k < c->in->shards; k++) {
        int m = shard_head(c, k);
        if (m < 0)
            continue;
        for (int i = k * per; i < (k + 1) * per; i++) {
            const cn_node_t *me = c->me[i];
            if (i == m || !me || !c->wanted[i] || c->holds[i] > 0)
                continue;
            if ((me->flags & CN_REPLICA) && !strcmp(me->master, c->id[m]))
                continue;
            const cn_node_t *known = cn_find(c->in->pod[i].view, c->id[m]);
            if (!known || !(known->flags & CN_MASTER))
                continue; /* gossip has not told it yet */
            int other = pod_of_id(c, me->master);
            if (me->flags & CN_MASTER)
                unclaim(c, i, k, m);
            ctopo_cmd_t *cmd =
                add_cmd(c, CTOPO_REPLICATE, i, "pod %s (shard %d) %s%s%s; its shard's master is %s",
                        c->in->pod[i].pod, k, me->flags & CN_REPLICA ? "replicates " : "is a master without slots",
                        me->flags & CN_REPLICA ? (other >= 0 ? c->in->pod[other].pod : "a node of no pod") : "",
                        me->flags & CN_REPLICA ? ", another shard's" : "", c->in->pod[m].pod);
            add_arg(cmd, "REPLICATE");
            add_arg(cmd, "%s", c->id[m]);
            sent++;
        }
    }
    return sent;
}

/* ---- 5, 6. HANDOVER and ROLLOUT --------------------------------------------------------- */

/* The replica of master m to hand over to: linked, Ready, present, not terminating, up to
 * date when want_current; the highest offset. -1 when none. */
static int handover_to(const ctx_t *c, int m, int want_current)
{
    int best = -1, per = c->per, k = shard_of(c, m);
    for (int i = k * per; i < (k + 1) * per; i++) {
        const ctopo_pod_t *p = &c->in->pod[i];
        if (i == m || !c->wanted[i] || !c->me[i] || !(c->me[i]->flags & CN_REPLICA) ||
            strcmp(c->me[i]->master, c->id[m]) ||
            !p->link_up || !p->ready || p->terminating || (want_current && p->outdated))
            continue;
        if (best < 0 || p->offset > c->in->pod[best].offset)
            best = i;
    }
    return best;
}

static void failover(ctx_t *c, int m, int to, const char *what)
{
    ctopo_cmd_t *cmd = add_cmd(c, CTOPO_FAILOVER, to, "master %s is %s: %s takes its role", c->in->pod[m].pod, what,
                               c->in->pod[to].pod);
    add_arg(cmd, "FAILOVER");
}

/* Master m (what it is, for the command's reason) hands its role to its best replica
 * (handover_to). Returns 1 when it did, 0 when no replica can take it. */
static int hand_over(ctx_t *c, int m, const char *what)
{
    int to = handover_to(c, m, 0);
    if (to < 0)
        return 0;
    failover(c, m, to, what);
    return 1;
}

/* A terminating master hands its role over. Returns 1 when it did (or waits). */
static int step_terminating(ctx_t *c)
{
    for (int k = 0; k < c->out->nshards; k++) {
        int m = shard_master(c, k);
        if (m >= 0 && c->in->pod[m].terminating && hand_over(c, m, "terminating"))
            return 1;
    }
    return 0;
}

/* 1 when every pod is present, Ready, observed and every replica linked. */
static int all_settled(const ctx_t *c)
{
    for (int i = 0; i < c->n; i++) {
        const ctopo_pod_t *p = &c->in->pod[i];
        if (c->wanted[i] && (!p->present || !p->ready || p->terminating || !c->me[i] ||
                             ((c->me[i]->flags & CN_REPLICA) && !p->link_up)))
            return 0;
    }
    return 1;
}

static int step_rollout(ctx_t *c)
{
    int outdated = -1;
    for (int i = c->n - 1; i >= 0; i--)
        if (c->wanted[i] && c->in->pod[i].present && c->in->pod[i].outdated && outdated < 0)
            outdated = i;
    if (outdated < 0)
        return 0;
    c->out->waiting = 1;
    if (!all_settled(c))
        return 1;
    /* replicas first, the highest index first */
    for (int i = c->n - 1; i >= 0; i--)
        if (c->wanted[i] && c->in->pod[i].outdated && c->me[i] && c->holds[i] == 0) {
            c->out->delete_pod = i;
            return 1;
        }
    int m = outdated, to = handover_to(c, m, 1);
    if (to >= 0)
        failover(c, m, to, "outdated");
    else if (c->in->replicas == 0)
        c->out->delete_pod = m; /* nobody to hand over to: in place */
    return 1;
}

/* ---- 9. EPOCHS ------------------------------------------------------------------------ */

/* A master at config epoch 0 gets a unique one (CLUSTER BUMPEPOCH), once nothing else is
 * to do: bootstrap leaves one master at 0 (ADDSLOTSRANGE bumps nothing; Redis's collision
 * rule moves all but one), and a pod back without nodes.conf but with its AOF claims its
 * keys' slots at epoch 0 (simulation finding 1): against a master at 0 the tie, or a
 * collision the new node wins (the smaller id takes currentEpoch + 1), gave it the
 * shard's slots. Only a master whose every claim the cluster agrees on, or an empty one
 * in a bootstrapped cluster (one fewer at 0 to collide with), is bumped: never one with
 * claims of its own (step 4 unclaims those). */
static int step_epochs(ctx_t *c)
{
    int sent = 0;
    for (int i = 0; i < c->n; i++) {
        const cn_node_t *me = c->me[i];
        if (!me || !c->wanted[i] || !(me->flags & CN_MASTER) || me->config_epoch != 0 || me->nopen)
            continue;
        int agreed = c->holds[i] > 0 && cn_slot_count(me) == c->holds[i];
        int empty = c->in->bootstrapped && !me->nranges && !c->holds[i];
        if (!agreed && !empty)
            continue;
        ctopo_cmd_t *cmd = add_cmd(c, CTOPO_EPOCH, i, "master %s is at config epoch 0: a unique one, so that no node "
                                   "with claims of its own can tie with it or win a collision", c->in->pod[i].pod);
        add_arg(cmd, "BUMPEPOCH");
        sent++;
    }
    return sent;
}

/* ---- 6. RESHARD --------------------------------------------------------------------------- */

/* Shard k's share of the slots: 16384 / shards for a wanted shard, the remainder one each
 * to the wanted shards that hold most now (ties: the lowest index): the fewest moves;
 * 0 for a leaving shard. count[] is what each shard holds now. */
static void shares(const ctx_t *c, const int *count, int *share)
{
    int s = c->in->shards, extra = CN_SLOTS % s;
    int given[CTOPO_MAX_SHARDS] = {0};
    for (int k = 0; k < c->out->nshards; k++)
        share[k] = k < s ? CN_SLOTS / s : 0;
    for (int e = 0; e < extra; e++) {
        int best = -1;
        for (int k = 0; k < s; k++)
            if (!given[k] && (best < 0 || count[k] > count[best]))
                best = k;
        given[best] = 1;
        share[best]++;
    }
}

/* The other masters holding slots, for the move from source to target, and the pods
 * that follow the target. */
static void move_others(ctx_t *c, ctopo_move_t *mv)
{
    for (int k = 0; k < c->out->nshards && mv->nothers < CTOPO_MAX_SHARDS; k++) {
        int m = shard_master(c, k);
        if (m >= 0 && m != mv->source && m != mv->target)
            mv->others[mv->nothers++] = m;
    }
    for (int i = 0; i < c->n && mv->nreplicas < CTOPO_MAX_REPLICAS; i++)
        if (c->me[i] && (c->me[i]->flags & CN_REPLICA) && c->id[mv->target] &&
            !strcmp(c->me[i]->master, c->id[mv->target]))
            mv->replicas[mv->nreplicas++] = i;
}

/* The head of pod p's shard, or p itself when it is a master (a move's end). */
static int end_of(const ctx_t *c, int p)
{
    if (p < 0)
        return -1;
    if (c->me[p] && (c->me[p]->flags & CN_MASTER))
        return p;
    return shard_head(c, shard_of(c, p));
}

/* slot into the resume move mv's ranges, unless there (both ends show it open) or full. */
static void resume_add(ctopo_move_t *mv, int slot)
{
    for (size_t r = 0; r < mv->nranges; r++)
        if (slot >= mv->ranges[r].from && slot <= mv->ranges[r].to)
            return;
    if (mv->ranges[mv->nranges - 1].to == slot - 1)
        mv->ranges[mv->nranges - 1].to = slot;
    else if (mv->nranges < CTOPO_MAX_MOVE_RANGES)
        mv->ranges[mv->nranges++] = (cn_range_t){slot, slot};
    else
        return;
    mv->slots++;
}

/* The open slots (moves cut off): the first one's move, finished toward where it was
 * going, with every other open slot of the same source and target (a group of slots
 * cut off, slotmove.h GROUPS); the rest, the next plans'. Returns 1
 * when one was found (mv set, or nothing to do but wait), 0 when none is open. */
static int open_move(ctx_t *c, ctopo_move_t *mv)
{
    for (int i = 0; i < c->n; i++) {
        const cn_node_t *me = c->me[i];
        for (size_t x = 0; me && (me->flags & CN_MASTER) && x < me->nopen; x++) {
            const cn_open_slot_t *o = &me->open[x];
            int owner = c->owner[o->slot], peer = pod_of_id(c, o->peer);
            int target = o->importing ? i : end_of(c, peer);
            int source = owner >= 0 && owner != target ? owner : o->importing ? -1 : i;
            c->out->slots_to_move++;
            if (mv->source >= 0 && source == mv->source && target == mv->target) {
                resume_add(mv, o->slot); /* a group cut off: its open slots in one move */
                continue;
            }
            if (mv->source >= 0 || source < 0 || target < 0 || source == target || !c->me[source] ||
                !c->me[target] || !c->in->pod[source].ip[0] || !c->in->pod[target].ip[0])
                continue;
            mv->source = source;
            mv->target = target;
            mv->ranges[0] = (cn_range_t){o->slot, o->slot};
            mv->nranges = 1;
            mv->slots = 1;
            mv->resume = 1;
        }
    }
    return c->out->slots_to_move > 0;
}

/* The highest n slots the cluster gives pod p after its highest skip, as ranges (highest
 * first) into mv. */
static void highest_slots(const ctx_t *c, int p, int skip, int n, ctopo_move_t *mv)
{
    for (int slot = CN_SLOTS - 1; slot >= 0 && n > 0; slot--) {
        if (c->owner[slot] != p || skip-- > 0)
            continue;
        cn_range_t *r = mv->nranges ? &mv->ranges[mv->nranges - 1] : NULL;
        if (r && r->from == slot + 1)
            r->from = slot;
        else if (mv->nranges < CTOPO_MAX_MOVE_RANGES)
            mv->ranges[mv->nranges++] = (cn_range_t){slot, slot};
        else
            break;
        mv->slots++;
        n--;
    }
}

/* 1 when slots may move: bootstrapped, every pod observed and met, every slot held,
 * every node says cluster_state:ok. */
static int may_move(const ctx_t *c, const cn_slots_t *held)
{
    if (!c->in->bootstrapped || !c->all_observed || !fully_met(c))
        return 0;
    cn_range_t r[1];
    if (cn_slots_ranges(held, 0, CN_SLOTS - 1, 0, r, 1))
        return 0;
    /* every node sees the cluster up (a node just met says CLUSTERDOWN to MIGRATE) */
    for (int i = 0; i < c->n; i++)
        if (c->me[i] && !c->retired[i] && c->in->pod[i].info.state_ok != 1)
            return 0;
    return 1;
}

/* 1 when the cluster may reshard: slots may move, each shard one head, each wanted
 * shard's replicas linked. */
static int may_reshard(ctx_t *c, const cn_slots_t *held)
{
    if (!may_move(c, held))
        return 0;
    for (int k = 0; k < c->out->nshards; k++) {
        int h = shard_head(c, k);
        if (h == -2 || (k < c->in->shards && (h < 0 || c->out->shard[k].nreplicas < c->in->replicas)))
            return 0;
    }
    return 1;
}

/* The moves that give each shard its share: pairs of the first shard with too many
 * (leaving ones first) and the first with too few, as many slots as the one can give and
 * the other take, the source's highest slots not given to an earlier pair; until the
 * counts are even or the result is full. */
static void balance_moves(ctx_t *c, int *count, const int *share)
{
    ctopo_result_t *o = c->out;
    int given[CTOPO_MAX_SHARDS] = {0};
    while (o->nmoves < CTOPO_MAX_MOVES) {
        int from = -1, to = -1;
        for (int pass = 0; pass < 2 && from < 0; pass++)
            for (int k = pass ? 0 : c->in->shards; k < (pass ? c->in->shards : o->nshards) && from < 0; k++)
                if (count[k] > share[k])
                    from = k;
        for (int k = 0; k < c->in->shards && to < 0; k++)
            if (count[k] < share[k])
                to = k;
        if (from < 0 || to < 0)
            return;
        int n = count[from] - share[from] < share[to] - count[to] ? count[from] - share[from] : share[to] - count[to];
        ctopo_move_t *mv = &o->moves[o->nmoves++];
        mv->source = shard_master(c, from);
        mv->target = shard_head(c, to);
        highest_slots(c, mv->source, given[from], n, mv);
        given[from] += n;
        count[from] -= n;
        count[to] += n;
        move_others(c, mv);
    }
}

static int step_reshard(ctx_t *c, const cn_slots_t *held)
{
    if (!c->in->bootstrapped)
        return 0;
    ctopo_move_t open;
    memset(&open, 0, sizeof(open));
    open.source = open.target = -1;
    int any_open = open_move(c, &open);
    int count[CTOPO_MAX_SHARDS] = {0}, share[CTOPO_MAX_SHARDS];
    for (int k = 0; k < c->out->nshards; k++) {
        int m = shard_master(c, k);
        count[k] = m >= 0 ? c->holds[m] : 0;
    }
    shares(c, count, share);
    for (int k = 0; k < c->out->nshards; k++)
        c->out->slots_to_move += count[k] > share[k] ? count[k] - share[k] : 0;
    if (!c->out->slots_to_move || !may_reshard(c, held))
        return 0;
    c->out->waiting = 1;
    if (any_open) {
        if (open.source < 0)
            return 1; /* open slots whose ends are not both observed: wait */
        move_others(c, &open);
        c->out->moves[c->out->nmoves++] = open;
    }
    if (!c->in->moves_held)
        balance_moves(c, count, share); /* (after the open slot's move: the plan goes on with the rest) */
    return 1;
}

/* ---- 5b. TWO MASTERS ------------------------------------------------------------------------- */

/* Shard k's chosen master among its pods holding slots: the most slots, then the higher
 * config epoch, then the lowest index. */
static int chosen_master(const ctx_t *c, int k)
{
    int best = -1;
    for (int i = k * c->per; i < (k + 1) * c->per; i++)
        if (c->holds[i] > 0 &&
            (best < 0 || c->holds[i] > c->holds[best] ||
             (c->holds[i] == c->holds[best] && c->me[i]->config_epoch > c->me[best]->config_epoch)))
            best = i;
    return best;
}

/* A shard with two masters holding slots: the other's slots move to the chosen one (a
 * move inside the shard; an open slot finished first). Returns 1 when a move is planned
 * (or an open slot's ends are awaited), 0 when there is none or slots may not move yet. */
static int step_two_masters(ctx_t *c, const cn_slots_t *held)
{
    for (int k = 0; k < c->out->nshards; k++) {
        if (shard_master(c, k) != -2)
            continue;
        int m = chosen_master(c, k);
        c->out->waiting = 1;
        ctopo_move_t *mv = &c->out->moves[c->out->nmoves];
        memset(mv, 0, sizeof(*mv));
        mv->source = mv->target = -1;
        int any_open = open_move(c, mv);
        if (!may_move(c, held))
            return 0; /* (the other steps go on: they may be what it waits for) */
        if (any_open && mv->source < 0)
            return 1;
        for (int i = k * c->per; i < (k + 1) * c->per && !any_open; i++)
            if (i != m && c->holds[i] > 0) {
                mv->source = i;
                mv->target = m;
                highest_slots(c, i, 0, c->holds[i], mv);
                c->out->slots_to_move += c->holds[i];
                break;
            }
        move_others(c, mv);
        c->out->nmoves++;
        return 1;
    }
    return 0;
}

/* ---- 7. RETIRE ------------------------------------------------------------------------------ */

/* A wanted shard whose slots a leaving pod holds hands them to a wanted replica. Returns 1
 * when it did. */
static int leaving_master(ctx_t *c)
{
    for (int k = 0; k < c->in->shards; k++) {
        int m = shard_master(c, k);
        if (m >= 0 && !c->wanted[m] && hand_over(c, m, "leaving (spec.cluster.replicasPerShard shrank)"))
            return 1;
    }
    return 0;
}

static int step_retire(ctx_t *c)
{
    if (leaving_master(c))
        return 1;
    int sent = 0;
    for (int i = 0; i < c->n; i++) {
        const cn_node_t *me = c->me[i];
        if (c->wanted[i] || c->retired[i] || !me || c->holds[i] || me->nranges || me->nopen)
            continue;
        /* a leaving master of a wanted shard's replicas: they follow it, wait (leaving_master) */
        int held_up = 0;
        for (int j = 0; j < c->n; j++)
            held_up |= c->wanted[j] && c->me[j] && !strcmp(c->me[j]->master, me->id);
        if (held_up)
            continue;
        /* a replica of a master that still holds slots but is not a live, observed, wanted
         * one (a leaving shard's failed master): Redis may elect it, or 2b will; retired
         * now, the slots would stay with a dead id for good (simulation finding 4) */
        int m0 = pod_of_id(c, me->master);
        if ((me->flags & CN_REPLICA) && holds_anywhere(c, me->master) && (m0 < 0 || !c->me[m0] || !c->wanted[m0]))
            continue;
        for (int m = 0; m < c->n; m++) {
            if (m == i || c->retired[m] || !c->me[m] || !cn_find(c->in->pod[m].view, me->id) ||
                !strcmp(c->me[m]->master, me->id))
                continue;
            ctopo_cmd_t *cmd = add_cmd(c, CTOPO_FORGET, m, "pod %s leaves the cluster (the spec shrank)",
                                       c->in->pod[i].pod);
            add_arg(cmd, "FORGET");
            add_arg(cmd, "%s", me->id);
        }
        ctopo_cmd_t *cmd = add_cmd(c, CTOPO_RESET, i, "pod %s leaves the cluster (the spec shrank): it forgets it",
                                   c->in->pod[i].pod);
        add_arg(cmd, "RESET");
        add_arg(cmd, "HARD");
        sent++;
    }
    return sent;
}

/* What the caller keeps of the layout: each shard's StatefulSet replicas, and whether a
 * leaving shard stays (not every pod of it retired or gone yet). */
static void layout_kept(ctx_t *c)
{
    for (int k = 0; k < c->out->nshards; k++) {
        int busy = 0, highest = 0; /* a leaving pod still in the cluster; the highest index of one there */
        for (int j = 0; j < c->per; j++) {
            int i = k * c->per + j;
            if (!c->wanted[i] && c->in->pod[i].present && !c->retired[i])
                busy = 1;
            if (c->in->pod[i].present)
                highest = j + 1;
        }
        int have = c->in->sts_replicas[k] ? c->in->sts_replicas[k] : highest;
        if (c->in->stale) { /* FRESHNESS: nothing shrinks on an old look */
            c->out->replicas_of[k] = have > 1 + c->in->replicas || k >= c->in->shards ? have : 1 + c->in->replicas;
            c->out->keep_shard[k] = 1;
            continue;
        }
        if (k < c->in->shards)
            c->out->replicas_of[k] = busy && have > 1 + c->in->replicas ? have : 1 + c->in->replicas;
        else
            c->out->replicas_of[k] = have;
        c->out->keep_shard[k] = k < c->in->shards || busy;
    }
}

/* ---- labels and status ------------------------------------------------------------------ */

/* Role labels follow what each node reports of itself: primary for a master holding
 * slots by the agreement (the highest config epoch), replica for a replica. And, as in
 * Replication mode (topology.c, label_step), no second pod of a shard keeps role=primary:
 * when a shard has its primary, any other pod of it labelled primary is labelled replica,
 * observed or not (a killed or frozen old master that Redis failed over: when it answers
 * again it follows the new one). plan_cluster.c sends the replica labels before the
 * primary ones, so the -primary selectors never see two pods of a shard at once. */
static void labels(ctx_t *c)
{
    int primary_of[CTOPO_MAX_PODS];
    for (int i = 0; i < c->n; i++)
        primary_of[i] = -1;
    const char *want[CTOPO_MAX_PODS];
    for (int i = 0; i < c->n; i++) {
        const cn_node_t *me = c->me[i];
        want[i] = !me ? NULL : (me->flags & CN_MASTER) && c->holds[i] ? "primary"
                             : (me->flags & CN_REPLICA)              ? "replica"
                                                                     : NULL;
        if (want[i] && !strcmp(want[i], "primary"))
            primary_of[shard_of(c, i)] = i;
    }
    for (int i = 0; i < c->n; i++) {
        const char *have = c->in->pod[i].label;
        int p = primary_of[shard_of(c, i)];
        if (!want[i] && p >= 0 && p != i && have && !strcmp(have, "primary"))
            want[i] = "replica";
        if (want[i] && (!have || strcmp(have, want[i])))
            c->out->label[i] = want[i];
    }
}

/* Who held the slots of r (from any view): "node abc (pod x, fail)". */
static void holders(const ctx_t *c, cn_range_t r, char *out, size_t len)
{
    out[0] = '\0';
    for (int i = 0; i < c->n && !out[0]; i++) {
        const cn_view_t *v = c->in->pod[i].observed ? c->in->pod[i].view : NULL;
        for (size_t k = 0; v && k < v->n && !out[0]; k++)
            for (size_t x = 0; x < v->nodes[k].nranges; x++)
                if (v->nodes[k].ranges[x].from <= r.from && r.from <= v->nodes[k].ranges[x].to) {
                    int p = pod_of_id(c, v->nodes[k].id);
                    snprintf(out, len, "node %.12s (%s%s)", v->nodes[k].id, p >= 0 ? c->in->pod[p].pod : "no pod",
                             v->nodes[k].flags & CN_FAIL ? ", fail" : "");
                    break;
                }
    }
    if (!out[0])
        snprintf(out, len, "no node");
}

static void shards_status(ctx_t *c)
{
    int per = c->per;
    for (int k = 0; k < c->out->nshards; k++) {
        ctopo_shard_t *s = &c->out->shard[k];
        int m = shard_head(c, k), n = 0;
        s->master = m >= 0 ? m : -1;
        if (m >= 0) {
            cn_slots_t mine;
            cn_range_t r[64];
            memset(&mine, 0, sizeof(mine));
            for (int slot = 0; slot < CN_SLOTS; slot++)
                if (c->owner[slot] == m)
                    cn_slots_set(&mine, slot);
            size_t nr = cn_slots_ranges(&mine, 0, CN_SLOTS - 1, 1, r, 64);
            cn_ranges_text(r, nr < 64 ? nr : 64, s->slots, sizeof(s->slots));
        }
        for (int i = k * per; i < (k + 1) * per && n < CTOPO_MAX_REPLICAS; i++) {
            if (i == m || !c->me[i] || !(c->me[i]->flags & CN_REPLICA))
                continue;
            s->replica[n++] = i;
            s->nreplicas += m >= 0 && !strcmp(c->me[i]->master, c->id[m]) && c->in->pod[i].link_up;
        }
        s->replica[n] = -1;
    }
}

/* The shards' problems: two masters, replicas missing, a resharding or a shrink under way. */
static void shard_problems(ctx_t *c)
{
    ctopo_result_t *o = c->out;
    for (int k = 0; k < o->nshards; k++) {
        if (shard_master(c, k) == -2)
            problem(c, 0, "TwoMasters", "shard %d has two masters holding slots: the slots of one move to the other",
                    k);
        if (k < c->in->shards && o->shard[k].master >= 0 && o->shard[k].nreplicas < c->in->replicas)
            problem(c, 0, "ReplicasMissing", "shard %d: %d of %d replicas linked", k, o->shard[k].nreplicas,
                    c->in->replicas);
    }
    if (o->slots_to_move) {
        char what[160] = "";
        if (o->nmoves)
            snprintf(what, sizeof(what), ": now %d from %s to %s%s", o->moves[0].slots,
                     c->in->pod[o->moves[0].source].pod, c->in->pod[o->moves[0].target].pod,
                     o->nmoves > 1 ? ", and more" : "");
        problem(c, 0, "Resharding", "%d slot(s) to move to give every shard its share%s", o->slots_to_move, what);
    }
    for (int k = 0; k < o->nshards; k++)
        if (!o->keep_shard[k] || o->replicas_of[k] != 1 + c->in->replicas || k >= c->in->shards)
            problem(c, 0, "Shrinking", "shard %d: leaving pods are still in the cluster or not yet removed", k);
}

/* ClusterHealthy's reason, after the steps. */
static void health(ctx_t *c, const cn_slots_t *held, int meeting)
{
    ctopo_result_t *o = c->out;
    cn_range_t r[8];
    size_t nun = cn_slots_ranges(held, 0, CN_SLOTS - 1, 0, r, 8);
    int state_ok = 1, any = 0;
    for (int i = 0; i < c->n; i++)
        if (c->me[i]) {
            any = 1;
            state_ok &= c->in->pod[i].info.state_ok == 1;
        }
    o->state_ok = any && state_ok;
    o->slots_assigned = 0;
    for (int slot = 0; slot < CN_SLOTS; slot++)
        o->slots_assigned += cn_slots_has(held, slot);
    o->bootstrapped = c->in->bootstrapped || (c->all_observed && nun == 0);
    if (!c->all_observed)
        problem(c, 0, "NotObserved", "not every pod of the layout is present and answering CLUSTER NODES");
    if (meeting)
        problem(c, 0, "Meeting", "%d node(s) not yet met", meeting);
    if (!o->bootstrapped)
        problem(c, 0, "Bootstrapping", "%d of %d slots assigned", o->slots_assigned, CN_SLOTS);
    if (nun) {
        char text[256], who[128];
        cn_ranges_text(r, nun < 8 ? nun : 8, text, sizeof(text));
        holders(c, r[0], who, sizeof(who));
        problem(c, 1, "SlotsUncovered",
                "slots %s%s are not held by any live master (%s held %d-%d); the operator does not assign them "
                "again (their data may live there): bring that node back, or assign them yourself",
                text, nun > 8 ? ",..." : "", who, r[0].from, r[0].to);
    }
    shard_problems(c);
    if (!o->state_ok)
        problem(c, 0, "ClusterStateFail", "cluster_state is not ok on every node");
    o->healthy = !o->reason[0];
    if (o->healthy)
        problem(c, 0, "ClusterOK", "%d shards, every slot covered, %d replica(s) each linked", c->in->shards,
                c->in->replicas);
    o->waiting |= !o->healthy && !o->degraded;
}

int ctopo_compute(const ctopo_input_t *in, ctopo_result_t *out)
{
    memset(out, 0, sizeof(*out));
    out->delete_pod = -1;
    int nshards = in->nshards ? in->nshards : in->shards, width = in->width ? in->width : 1 + in->replicas;
    if (in->shards < 3 || in->shards > CTOPO_MAX_SHARDS || in->replicas < 0 || in->replicas > CTOPO_MAX_REPLICAS ||
        nshards < in->shards || nshards > CTOPO_MAX_SHARDS || width < 1 + in->replicas ||
        width > 1 + CTOPO_MAX_REPLICAS)
        return -1;
    static short owner[CN_SLOTS];
    ctx_t c = {.in = in, .out = out, .n = nshards * width, .per = width, .owner = owner};
    out->nshards = nshards;
    gather(&c);
    cn_slots_t claimed, held;
    slot_maps(&c, &claimed, &held);
    pick_anchor(&c);
    shards_status(&c); /* (RESHARD reads the replicas linked) */
    int meeting = 0;
    if (in->stale) { /* FRESHNESS: what the views say may be what the last commands undid */
        out->waiting = 1;
    } else {
        meeting = step_meet(&c);
        int orphaned = step_orphaned(&c); /* (a failover needs no MEET) */
        if (!meeting && !orphaned && !step_forget(&c) && !step_slots(&c, &claimed) && !step_replicate(&c) &&
            !step_terminating(&c) && !step_two_masters(&c, &held) && !step_reshard(&c, &held) &&
            !step_retire(&c) && !step_rollout(&c))
            step_epochs(&c);
        labels(&c);
    }
    out->waiting |= out->ncmds > 0 || out->nmoves > 0;
    layout_kept(&c);
    health(&c, &held, meeting);
    return 0;
}
