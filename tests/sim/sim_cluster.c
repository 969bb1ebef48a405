/* sim_cluster: the Cluster mode simulation. See sim_cluster.h. */
#include "sim_cluster.h"

#include "cluster_topo.h"
#include "plan_cluster.h"
#include "redisexec.h"
#include "clusternodes.h"
#include "sim_env.h"
#include "sim_rng.h"
#include "slotmove.h"

#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MAXID 160        /* node ids in one run (a lost nodes.conf, a RESET HARD: a new one) */
#define MAXPOD 16        /* 4 shards x (1 + 3) */
#define NKEYS 64         /* the client's keys, spread over the slots */
#define TMO 30           /* cluster-node-timeout: 3 s */
#define GOSSIP 10        /* a full exchange between two linked nodes every second */
#define OBS_EVERY 10     /* observerd probes each pod every second */
#define MAXOPEN 256      /* a node's open slots (Redis has no bound; slotmove opens up to a group, 64) */
#define MAXHS 8
#define BASE_SHARDS 3
#define IP0 10

/* ---- the model ------------------------------------------------------------------------- */

typedef struct {
    int slot, importing, peer;
} open_t;

typedef struct {
    char id[CN_ID_LEN + 1];
    int pod;
    int alive;              /* its process runs */
    int master;             /* a replica: the node it follows; -1: a master */
    int repl_ip;            /* the address its replication follows (masterhost) */
    int synced_from, link_up, syncing;
    int64_t sync_done, link_down_since;
    uint64_t replid;
    int64_t offset;
    uint64_t epoch, cur, lastvote;
    int16_t owner[CN_SLOTS]; /* its slot table */
    int16_t cnt[MAXID];     /* slots it gives each node */
    int nowned;             /* slots it gives anyone */
    int nmine;              /* slots it gives itself */
    int nopen;
    open_t open[MAXOPEN];
    uint8_t know[MAXID], pfail[MAXID], fail[MAXID];
    int vip[MAXID];         /* 0: noaddr */
    int64_t pong[MAXID], fail_at[MAXID], forgot[MAXID], voted[MAXID];
    uint64_t vepoch[MAXID];
    int16_t vmaster[MAXID];
    uint32_t seen_claims[MAXID], seen_tab[MAXID], seen_mine[MAXID];
    int nhs;
    struct {
        int ip;
        int64_t since;
    } hs[MAXHS];
    int64_t val[NKEYS];
    int64_t elect_at, elect_epoch, mf_at;
    int rank, mf_force;
    uint32_t claims_ver, tab_ver, view_ver;
    uint32_t text_ver;
    int text_ok;
    char *text;
    size_t textlen, textcap;
    struct run *runs;       /* its table's ranges (runs_of) */
    int nruns, capruns;
    uint32_t runs_ver;
} node_t;

typedef struct {
    int present, running, isolated;
    int ip;                 /* its address (a recreated pod may get another) */
    int terminating;        /* deleted: it goes once its node is a replica, or at term_at */
    int64_t term_at;
    int id;                 /* its current node, -1 none */
    int64_t restart_at;     /* killed: its container starts again then (0: not killed) */
    int restart_new_id, restart_data, restart_new_ip;
    int64_t isolated_until;
} pod_t;

typedef struct {
    int valid, ip, state_ok, link_up;
    int64_t offset;
    char *text;
    int64_t probed;         /* the step it was taken (FRESHNESS) */
} snap_t;

typedef struct {
    snap_t pending, got;
    int64_t due;
    int has_pending;
    cn_view_t *view;        /* got.text parsed */
} obs_t;

typedef struct {
    sc_cfg_t cfg;
    sc_result_t res;
    sim_rng_t rng;
    int64_t tick, end_faults;
    int pfail_seen;         /* some node timed another out in this step */
    int64_t dump_at;        /* with a trace: the step whose slot tables are printed (SIM_DUMP) */
    node_t *n[MAXID];
    int nids;
    pod_t pod[MAXPOD];
    int R, width, shards, nsts, next_ip;
    uint32_t topo_ver;
    /* the client */
    int kslot[NKEYS];
    int64_t acked[NKEYS], gen;
    int wkey, wnode;
    int64_t wgen, woff, wdeadline;
    /* observerd and workerd */
    obs_t obs[MAXPOD];
    int obs_news;
    int64_t stall_until, stall_late, stall_hi, op_down_until, requeue_at, last_reconcile;
    int64_t last_cmd;       /* the step of the operator's last Redis command (its record), -1 none */
    int64_t kt_at;          /* kill-target: when pod kt_pod is killed (0: not armed) */
    int kt_pod;
    int probe_all;          /* observerd saw a newer record: every pod probed at once */
    int crash_armed, crash_after, bootstrapped;
    uint32_t in_ver, memo_ver; /* what the decisions read; the version the last one read */
    int64_t clock_ns;
    ctopo_input_t *in;
    ctopo_result_t *out;
    /* faults and convergence */
    int64_t next_fault, fault_at;
    int fault_open;
    uint32_t conv_ver, claims_seen;
    int converged;
    int64_t conv_checked;
} sc_t;

static int fail_now(sc_t *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail_now(sc_t *w, const char *fmt, ...)
{
    if (w->res.failed)
        return 1;
    w->res.failed = 1;
    w->res.step = w->tick;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->res.why, sizeof(w->res.why), fmt, ap);
    va_end(ap);
    if (w->cfg.trace)
        fprintf(w->cfg.trace, "%lld FAILED: %s\n", (long long)w->tick, w->res.why);
    return 1;
}

/* An event: into the digest (code and two numbers), and a line when tracing. */
static void ev(sc_t *w, int code, int64_t a, int64_t b, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void ev(sc_t *w, int code, int64_t a, int64_t b, const char *fmt, ...)
{
    int64_t v[4] = {w->tick, code, a, b};
    sim_digest(&w->res.digest, v, sizeof(v));
    if (!w->cfg.trace)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(w->cfg.trace, "%lld ", (long long)w->tick);
    vfprintf(w->cfg.trace, fmt, ap);
    fputc('\n', w->cfg.trace);
    va_end(ap);
}

static void bump(sc_t *w, node_t *x)
{
    x->view_ver++;
    w->topo_ver++;
}

static int pod_ip(const sc_t *w, int p)
{
    return w->pod[p].ip;
}

/* The pod at ip, or -1. */
static int pod_at(const sc_t *w, int ip)
{
    for (int p = 0; ip && p < MAXPOD; p++)
        if (w->pod[p].present && w->pod[p].ip == ip)
            return p;
    return -1;
}

/* The node answering at ip to someone at pod from (-1: the operator), or -1. */
static int node_at(const sc_t *w, int ip, int from)
{
    int p = pod_at(w, ip);
    if (p < 0 || !w->pod[p].running || w->pod[p].isolated || (from >= 0 && w->pod[from].isolated))
        return -1;
    return w->pod[p].id;
}

static int by_id(const sc_t *w, const char *id, size_t len)
{
    for (int i = 0; i < w->nids; i++)
        if (strlen(w->n[i]->id) == len && !memcmp(w->n[i]->id, id, len))
            return i;
    return -1;
}

static int new_node(sc_t *w, int pod)
{
    if (w->nids == MAXID)
        return -1;
    node_t *x = calloc(1, sizeof(*x));
    if (!x)
        return -1;
    int i = w->nids++;
    w->n[i] = x;
    for (int c = 0; c < CN_ID_LEN; c++)
        x->id[c] = "0123456789abcdef"[sim_rng_below(&w->rng, 16)];
    x->pod = pod;
    x->master = -1;
    x->synced_from = -1;
    x->replid = sim_rng_next(&w->rng);
    for (int s = 0; s < CN_SLOTS; s++)
        x->owner[s] = -1;
    for (int j = 0; j < MAXID; j++)
        x->vmaster[j] = -1;
    x->know[i] = 1;
    x->vip[i] = pod_ip(w, pod);
    return i;
}

static void set_owner(sc_t *w, int xi, int s, int o)
{
    node_t *x = w->n[xi];
    int was = x->owner[s];
    if (was == o)
        return;
    if (was == xi) {
        x->nmine--;
        x->claims_ver++;
    }
    if (o == xi) {
        x->nmine++;
        x->claims_ver++;
    }
    if (was >= 0) {
        x->cnt[was]--;
        x->nowned--;
    }
    if (o >= 0) {
        x->cnt[o]++;
        x->nowned++;
    }
    x->owner[s] = (int16_t)o;
    x->tab_ver++;
    bump(w, x);
}

/* A key's value on x changed: replicated (its offset moves). */
static void put(node_t *x, int k, int64_t v)
{
    x->val[k] = v;
    x->offset++;
}

static int keys_in(const sc_t *w, const node_t *x, int s)
{
    int n = 0;
    for (int k = 0; k < NKEYS; k++)
        n += w->kslot[k] == s && x->val[k];
    return n;
}

static int has_keys(const node_t *x)
{
    for (int k = 0; k < NKEYS; k++)
        if (x->val[k])
            return 1;
    return 0;
}

static open_t *open_of(node_t *x, int s)
{
    for (int i = 0; i < x->nopen; i++)
        if (x->open[i].slot == s)
            return &x->open[i];
    return NULL;
}

static void close_slot(sc_t *w, node_t *x, int s)
{
    for (int i = 0; i < x->nopen; i++)
        if (x->open[i].slot == s) {
            x->open[i] = x->open[--x->nopen];
            bump(w, x);
            return;
        }
}

static uint64_t epoch_in(const sc_t *w, int xi, int o)
{
    return o == xi ? w->n[xi]->epoch : w->n[xi]->vepoch[o];
}

/* x follows m (CLUSTER REPLICATE, or Redis's own reconfiguration). */
static void set_master(sc_t *w, int xi, int m)
{
    node_t *x = w->n[xi];
    for (int s = 0; s < CN_SLOTS && x->nmine; s++)
        if (x->owner[s] == xi)
            set_owner(w, xi, s, -1);
    x->nopen = 0;
    x->master = m;
    x->repl_ip = x->vip[m];
    x->synced_from = -1;
    x->link_up = 0;
    x->syncing = 0;
    x->link_down_since = w->tick;
    x->elect_at = x->mf_at = 0;
    x->claims_ver++;
    bump(w, x);
    ev(w, 1, xi, m, "node %d (pod %d) now replica of node %d", xi, x->pod, m);
}

/* How many masters hold slots in x's table (Redis's cluster size). */
static int size_of(sc_t *w, int xi)
{
    const node_t *x = w->n[xi];
    int n = 0;
    for (int o = 0; o < w->nids; o++)
        n += x->cnt[o] > 0;
    return n;
}

/* cluster_state:ok in x's view: every slot owned by a node it does not mark fail. */
static int state_ok(sc_t *w, int xi)
{
    const node_t *x = w->n[xi];
    if (x->nowned != CN_SLOTS)
        return 0;
    for (int o = 0; o < w->nids; o++)
        if (x->cnt[o] && x->fail[o])
            return 0;
    return 1;
}

static int count_owned(const node_t *x, int o)
{
    return x->cnt[o];
}

/* Node xi hears claims of node z at epoch e: every slot table[s] == z
 * (clusterUpdateSlotsConfigWith). */
static void take_claims(sc_t *w, int xi, int z, uint64_t e, const int16_t *table)
{
    node_t *x = w->n[xi];
    int curmaster = x->master >= 0 ? x->master : xi, lost_ours = 0;
    int dirty[NKEYS], ndirty = 0;
    for (int s = 0; s < CN_SLOTS; s++) {
        if (table[s] != z)
            continue;
        int o = x->owner[s];
        if (o == z)
            continue;
        open_t *op = open_of(x, s);
        if (op && op->importing)
            continue;
        if (o >= 0 && epoch_in(w, xi, o) >= e)
            continue;
        if (o == curmaster && o >= 0)
            lost_ours++;
        if (o == xi && keys_in(w, x, s))
            dirty[ndirty++] = s;
        set_owner(w, xi, s, z);
    }
    if (!lost_ours)
        return;
    int left = curmaster == xi ? x->nmine : count_owned(x, curmaster);
    if (left == 0 && z != xi && x->master != z) {
        ev(w, 2, xi, z, "node %d lost all its (master's) slots to node %d: follows it", xi, z);
        set_master(w, xi, z);
        return;
    }
    for (int d = 0; d < ndirty && x->master < 0; d++)
        for (int k = 0; k < NKEYS; k++)
            if (w->kslot[k] == dirty[d] && x->val[k]) {
                ev(w, 3, xi, k, "node %d deletes key %d of a slot it lost", xi, k);
                if (x->val[k] >= w->acked[k] && w->n[z]->val[k] < w->acked[k])
                    fail_now(w, "acknowledged write lost: node %d (pod %d) gave slot %d up to node %d (pod %d, "
                                "epoch %llu) and deleted key %d (acknowledged value %lld); node %d has %lld",
                             xi, x->pod, dirty[d], z, w->n[z]->pod, (unsigned long long)e, k,
                             (long long)w->acked[k], z, (long long)w->n[z]->val[k]);
                put(x, k, 0);
            }
}

/* Node x starts a handshake with ip (a MEET, or gossip naming a node it does not know);
 * one at a time per address. */
static void start_handshake(sc_t *w, node_t *x, int ip)
{
    for (int h = 0; h < x->nhs; h++)
        if (x->hs[h].ip == ip)
            return;
    if (x->nhs < MAXHS) {
        x->hs[x->nhs].ip = ip;
        x->hs[x->nhs++].since = w->tick;
        bump(w, x);
    }
}

/* What xi takes from yi's header: currentEpoch, yi's epoch and role, a config epoch
 * collision (the node with the smaller id takes a new epoch), its master's new master. */
static void hear_header(sc_t *w, int xi, int yi)
{
    node_t *x = w->n[xi], *y = w->n[yi];
    if (y->cur > x->cur)
        x->cur = y->cur;
    if (x->vepoch[yi] != y->epoch || x->vmaster[yi] != y->master) {
        x->vepoch[yi] = y->epoch;
        x->vmaster[yi] = (int16_t)y->master;
        bump(w, x);
    }
    if (x->master < 0 && y->master < 0 && x->epoch == y->epoch && strcmp(y->id, x->id) > 0) {
        x->epoch = ++x->cur;
        x->claims_ver++;
        bump(w, x);
        ev(w, 4, xi, (int64_t)x->epoch, "node %d: epoch collision with node %d, takes epoch %llu", xi, yi,
           (unsigned long long)x->epoch);
    }
    if (x->master == yi && y->master >= 0 && y->master != xi)
        set_master(w, xi, y->master);
}

/* UPDATE: yi sees xi claim slots that yi gives to a node of a higher epoch and tells xi
 * that node's config. Checked on the exchanges of every second; yi crediting xi with as
 * many slots as xi claims is taken as agreement (a shortcut). */
static void hear_update(sc_t *w, int xi, int yi)
{
    node_t *x = w->n[xi], *y = w->n[yi];
    if (!x->nmine || y->cnt[xi] == x->nmine || (x->seen_tab[yi] == y->tab_ver && x->seen_mine[yi] == x->claims_ver))
        return;
    x->seen_tab[yi] = y->tab_ver;
    x->seen_mine[yi] = x->claims_ver;
    for (int s = 0; s < CN_SLOTS && x->nmine; s++) {
        int z = y->owner[s];
        if (x->owner[s] != xi || z < 0 || z == xi || !x->know[z])
            continue;
        uint64_t ez = epoch_in(w, yi, z);
        if (ez > x->epoch) {
            if (ez > x->vepoch[z])
                x->vepoch[z] = ez;
            take_claims(w, xi, z, ez, y->owner);
        }
    }
}

/* Gossip: the nodes yi knows at an address that xi does not know (a handshake), and the
 * address of a node xi cannot reach that yi reaches. */
static void hear_gossip(sc_t *w, int xi, int yi)
{
    node_t *x = w->n[xi], *y = w->n[yi];
    for (int z = 0; z < w->nids; z++) {
        if (z == xi || z == yi || !y->know[z] || !y->vip[z])
            continue;
        if (!x->know[z]) {
            if (w->tick >= x->forgot[z])
                start_handshake(w, x, y->vip[z]);
        } else if ((x->pfail[z] || x->fail[z]) && !y->pfail[z] && !y->fail[z] && x->vip[z] != y->vip[z]) {
            x->vip[z] = y->vip[z];
            bump(w, x);
        }
    }
}

/* Node xi hears node yi (a PING or PONG with its header; gossip once a second). */
static void contact(sc_t *w, int xi, int yi, int gossip)
{
    node_t *x = w->n[xi], *y = w->n[yi];
    hear_header(w, xi, yi);
    if (y->master < 0 && x->seen_claims[yi] != y->claims_ver) {
        x->seen_claims[yi] = y->claims_ver;
        take_claims(w, xi, yi, y->epoch, y->owner);
    }
    if (gossip) {
        hear_update(w, xi, yi);
        hear_gossip(w, xi, yi);
    }
}

/* xi learns node zi at ip (a handshake or a MEET answered). */
static void learn(sc_t *w, int xi, int zi, int ip)
{
    node_t *x = w->n[xi];
    if (x->know[zi] && x->vip[zi] == ip)
        return;
    if (!x->know[zi]) {
        x->pong[zi] = w->tick;
        x->pfail[zi] = x->fail[zi] = 0;
        x->seen_claims[zi] = w->n[zi]->claims_ver - 1;
    }
    x->know[zi] = 1;
    x->vip[zi] = ip;
    if (x->master == zi)
        x->repl_ip = ip; /* nodeUpdateAddressIfNeeded: the replication follows */
    bump(w, x);
    ev(w, 5, xi, zi, "node %d knows node %d at %d", xi, zi, ip);
}

static void handshakes(sc_t *w, int xi)
{
    node_t *x = w->n[xi];
    for (int h = 0; h < x->nhs;) {
        int z = node_at(w, x->hs[h].ip, x->pod);
        if (z >= 0 && z != xi) {
            learn(w, xi, z, x->hs[h].ip);
            if (!w->n[z]->know[xi] || w->n[z]->vip[xi] != pod_ip(w, x->pod))
                learn(w, z, xi, pod_ip(w, x->pod));
        }
        if (z >= 0 || w->tick - x->hs[h].since > TMO) {
            x->hs[h] = x->hs[--x->nhs];
            bump(w, x);
        } else
            h++;
    }
}

/* The bus of node xi for one step: liveness of each known node, contacts. */
static void bus_node(sc_t *w, int xi)
{
    node_t *x = w->n[xi];
    handshakes(w, xi);
    for (int yi = 0; yi < w->nids; yi++) {
        if (yi == xi || !x->know[yi] || !x->vip[yi])
            continue;
        int z = node_at(w, x->vip[yi], x->pod);
        if (z < 0) {
            w->pfail_seen = 1;
            if (!x->pfail[yi] && !x->fail[yi] && w->tick - x->pong[yi] > TMO) {
                x->pfail[yi] = 1;
                bump(w, x);
                ev(w, 6, xi, yi, "node %d: node %d pfail", xi, yi);
            }
            continue;
        }
        if (z != yi) { /* another node id answers at its address */
            x->vip[yi] = 0;
            bump(w, x);
            w->res.noaddr++;
            ev(w, 7, xi, yi, "node %d: node %d noaddr (node %d answers at its address)", xi, yi, z);
            continue;
        }
        x->pong[yi] = w->tick;
        node_t *y = w->n[yi];
        if (y->know[xi] && y->vip[xi] != pod_ip(w, x->pod)) /* yi gets xi's PING from its address */
            learn(w, yi, xi, pod_ip(w, x->pod));
        if (x->pfail[yi]) {
            x->pfail[yi] = 0;
            bump(w, x);
        }
        if (x->fail[yi] && (x->vmaster[yi] >= 0 || !count_owned(x, yi) || w->tick - x->fail_at[yi] > 2 * TMO)) {
            x->fail[yi] = 0;
            bump(w, x);
            ev(w, 8, xi, yi, "node %d: node %d no longer fail", xi, yi);
        }
        int gossip = (w->tick + xi + yi) % GOSSIP == 0;
        if (gossip || x->seen_claims[yi] != w->n[yi]->claims_ver || x->vmaster[yi] != w->n[yi]->master)
            contact(w, xi, yi, gossip);
    }
}

static int reach(const sc_t *w, int a, int b)
{
    const node_t *x = w->n[a], *y = w->n[b];
    return x->alive && y->alive && !w->pod[x->pod].isolated && !w->pod[y->pod].isolated && x->know[b] &&
           x->vip[b] == pod_ip(w, y->pod);
}

/* FAIL: a node that has yi pfail counts the reports of the masters (gossip leaves out
 * nodes a sender has noaddr) and, with a majority, tells every node it reaches. */
static void fail_detect(sc_t *w, int yi)
{
    for (int xi = 0; xi < w->nids; xi++) {
        node_t *x = w->n[xi];
        if (!x->alive || !x->know[yi] || !x->pfail[yi] || x->fail[yi])
            continue;
        int reports = x->master < 0 && x->nmine > 0;
        for (int v = 0; v < w->nids; v++) {
            node_t *vn = w->n[v];
            reports += v != xi && vn->alive && vn->master < 0 && reach(w, xi, v) && vn->know[yi] && vn->vip[yi] &&
                       (vn->pfail[yi] || vn->fail[yi]);
        }
        if (reports < size_of(w, xi) / 2 + 1)
            continue;
        ev(w, 9, xi, yi, "node %d marks node %d FAIL (%d reports of %d masters)", xi, yi, reports, size_of(w, xi));
        for (int z = 0; z < w->nids; z++)
            if ((z == xi || reach(w, xi, z)) && w->n[z]->know[yi] && !w->n[z]->fail[yi]) {
                w->n[z]->fail[yi] = 1;
                w->n[z]->pfail[yi] = 0;
                w->n[z]->fail_at[yi] = w->tick;
                bump(w, w->n[z]);
            }
        return;
    }
}

/* Every acknowledged key of the slots node xi owns is there. Returns 1 when not. */
static int check_acked(sc_t *w, int xi, const char *when, int m)
{
    node_t *x = w->n[xi];
    for (int k = 0; k < NKEYS; k++)
        if (x->owner[w->kslot[k]] == xi && x->val[k] < w->acked[k])
            return fail_now(w, "acknowledged write lost: %s: node %d (pod %d) owns slot %d of key %d with value %lld, "
                               "acknowledged %lld (its old master node %d has %lld; the replica's offset %lld of "
                               "%lld, synced from node %d, link %s)",
                            when, xi, x->pod, w->kslot[k], k, (long long)x->val[k], (long long)w->acked[k], m,
                            m >= 0 ? (long long)w->n[m]->val[k] : -1LL, (long long)x->offset,
                            m >= 0 ? (long long)w->n[m]->offset : -1LL, x->synced_from, x->link_up ? "up" : "down");
    return 0;
}

/* Replica ri takes its master's role at epoch e. */
static void promote(sc_t *w, int ri, uint64_t e, int manual)
{
    node_t *r = w->n[ri];
    int m = r->master;
    if (e > r->epoch)
        r->epoch = e;
    if (e > r->cur)
        r->cur = e;
    r->master = -1;
    r->link_up = 0;
    r->elect_at = r->mf_at = 0;
    for (int s = 0; s < CN_SLOTS; s++)
        if (r->owner[s] == m)
            set_owner(w, ri, s, ri);
    r->claims_ver++;
    bump(w, r);
    ev(w, 10, ri, m, "node %d (pod %d) %s failover: master in place of node %d, epoch %llu", ri, r->pod,
       manual ? "manual" : "automatic", m, (unsigned long long)e);
    if (manual)
        w->res.manual_failovers++;
    else
        w->res.elections++;
    check_acked(w, ri, manual ? "manual failover" : "replica promoted by Redis Cluster", m);
}

/* A vote round for replica ri of m: a majority of the masters with slots, each voting
 * once an epoch and not twice for m within 2 x timeout. */
static int election(sc_t *w, int ri, int manual)
{
    node_t *r = w->n[ri];
    int m = r->master, votes = 0;
    uint64_t e = ++r->cur;
    for (int v = 0; v < w->nids; v++) {
        node_t *vn = w->n[v];
        if (v == ri || !vn->alive || vn->master >= 0 || !vn->nmine || !reach(w, ri, v) || !reach(w, v, ri))
            continue;
        if (vn->cur > e || vn->lastvote >= e || (!manual && !vn->fail[m]) ||
            (vn->voted[m] && w->tick - vn->voted[m] < 2 * TMO))
            continue;
        vn->cur = e;
        vn->lastvote = e;
        vn->voted[m] = w->tick;
        votes++;
    }
    if (votes < size_of(w, ri) / 2 + 1) {
        ev(w, 11, ri, votes, "node %d: election at epoch %llu lost (%d votes)", ri, (unsigned long long)e, votes);
        return 0;
    }
    promote(w, ri, e, manual);
    return 1;
}

static void failover_step(sc_t *w, int ri)
{
    node_t *r = w->n[ri];
    int m = r->master;
    if (m < 0)
        return;
    if (r->mf_at && w->tick >= r->mf_at) {
        node_t *mn = w->n[m];
        r->mf_at = 0;
        if (r->mf_force)
            election(w, ri, 1); /* FORCE: no handshake with the master */
        else if (reach(w, ri, m) && r->link_up && r->synced_from == m) {
            memcpy(r->val, mn->val, sizeof(r->val)); /* the master paused, the replica caught up */
            r->offset = mn->offset;
            election(w, ri, 1);
        } else
            ev(w, 12, ri, m, "node %d: manual failover aborted", ri);
        return;
    }
    /* no failover without data: a replica never synced since it started or was made one
     * (repl_down_since 0), or down longer than cluster-replica-validity-factor allows */
    if (!r->fail[m] || !count_owned(r, m) || r->synced_from < 0 ||
        (!r->link_up && w->tick - r->link_down_since > 10 * TMO + 100)) {
        r->elect_at = 0;
        return;
    }
    int rank = 0; /* the replicas of m with a greater offset */
    for (int o = 0; o < w->nids; o++)
        rank += o != ri && w->n[o]->alive && w->n[o]->master == m && w->n[o]->offset > r->offset;
    if (!r->elect_at) {
        r->elect_at = w->tick + 5 + sim_rng_range(&w->rng, 0, 5) + 10 * rank;
        r->rank = rank;
        return;
    }
    if (w->tick < r->elect_at && rank > r->rank) { /* ranked again before asking for votes */
        r->elect_at += 10 * (rank - r->rank);
        r->rank = rank;
    }
    if (w->tick == r->elect_at && !election(w, ri, 0))
        r->elect_at = w->tick + 4 * TMO; /* the next try after the retry time */
    else if (w->tick > r->elect_at)
        r->elect_at = 0;
}

/* Replication of node ri for one step. */
static void replicate(sc_t *w, int ri)
{
    node_t *r = w->n[ri];
    int s = node_at(w, r->repl_ip, r->pod);
    if (s < 0 || s == ri) {
        if (r->link_up) {
            r->link_up = 0;
            r->link_down_since = w->tick;
            bump(w, r);
        }
        r->syncing = 0;
        return;
    }
    node_t *sn = w->n[s];
    if (r->synced_from != s || r->replid != sn->replid) {
        if (!r->syncing) {
            r->syncing = 1;
            r->sync_done = w->tick + sim_rng_range(&w->rng, 3, 15);
            if (r->link_up) {
                r->link_up = 0;
                r->link_down_since = w->tick;
            }
        } else if (w->tick >= r->sync_done) {
            memcpy(r->val, sn->val, sizeof(r->val));
            r->offset = sn->offset;
            r->replid = sn->replid;
            r->synced_from = s;
            r->syncing = 0;
            r->link_up = 1;
            bump(w, r);
            ev(w, 13, ri, s, "node %d: full sync from node %d done", ri, s);
        }
        return;
    }
    if (!r->link_up) {
        r->link_up = 1;
        bump(w, r);
    }
    if (r->offset != sn->offset && sim_rng_chance(&w->rng, 3, 4)) {
        memcpy(r->val, sn->val, sizeof(r->val));
        r->offset = sn->offset;
    }
}

/* ---- the client: SET then WAIT 1, routed as a cluster client routes ------------------- */

/* The node whose claim of slot s has the highest epoch among the running nodes. */
static int consensus_owner(const sc_t *w, int s)
{
    int best = -1;
    for (int i = 0; i < w->nids; i++) {
        const node_t *x = w->n[i];
        if (x->alive && x->master < 0 && x->owner[s] == i && (best < 0 || x->epoch > w->n[best]->epoch))
            best = i;
    }
    return best;
}

static void client_write(sc_t *w)
{
    int k = (int)sim_rng_below(&w->rng, NKEYS), s = w->kslot[k];
    int p = (int)sim_rng_below(&w->rng, MAXPOD);
    if (!w->pod[p].present || !w->pod[p].running || w->pod[p].isolated)
        return;
    int at = w->pod[p].id, asking = 0;
    for (int hop = 0; hop < 4; hop++) {
        node_t *x = w->n[at];
        if (!state_ok(w, at))
            return; /* CLUSTERDOWN */
        open_t *op = open_of(x, s);
        int to = -1;
        if (x->master < 0 && (x->owner[s] == at || (asking && op && op->importing))) {
            if (op && !op->importing && !x->val[k]) {
                to = op->peer; /* -ASK */
                asking = 1;
            } else {
                int c = consensus_owner(w, s);
                if (c == at && x->val[k] < w->acked[k])
                    fail_now(w, "acknowledged write lost: key %d (slot %d) has %lld on its owner node %d (pod %d), "
                                "acknowledged %lld",
                             k, s, (long long)x->val[k], at, x->pod, (long long)w->acked[k]);
                put(x, k, ++w->gen);
                w->res.writes++;
                w->wkey = k;
                w->wnode = at;
                w->wgen = w->gen;
                w->woff = x->offset;
                w->wdeadline = w->tick + 10;
                return;
            }
        } else {
            to = x->owner[s]; /* -MOVED */
            asking = 0;
        }
        if (to < 0 || !x->vip[to])
            return;
        at = node_at(w, x->vip[to], -1);
        if (at < 0)
            return;
    }
}

/* 1 when some running node has node xi flagged FAIL: a write it acknowledges now may
 * be lost by the failover under way (a master back before its replica's election ends). */
static int failed_somewhere(const sc_t *w, int xi)
{
    for (int i = 0; i < w->nids; i++)
        if (w->n[i]->alive && w->n[i]->fail[xi])
            return 1;
    return 0;
}

static void client_wait(sc_t *w)
{
    if (!w->wdeadline)
        return;
    node_t *m = w->n[w->wnode];
    for (int r = 0; r < w->nids; r++) {
        node_t *x = w->n[r];
        if (x->alive && x->master >= 0 && x->link_up && x->synced_from == w->wnode && x->replid == m->replid &&
            x->offset >= w->woff && x->val[w->wkey] == w->wgen) {
            w->res.acked++;
            if (failed_somewhere(w, w->wnode))
                w->res.unsafe_acked++; /* Redis Cluster does not keep these through its failover */
            else if (w->wgen > w->acked[w->wkey])
                w->acked[w->wkey] = w->wgen;
            w->wdeadline = 0;
            return;
        }
    }
    if (w->tick >= w->wdeadline)
        w->wdeadline = 0;
}

/* A text buffer *buf of capacity *cap made to hold need bytes: the capacity (first when
 * none yet) doubled until it does. Out of memory the simulation aborts. */
static void text_reserve(char **buf, size_t *cap, size_t need, size_t first)
{
    if (need <= *cap)
        return;
    size_t c = *cap ? *cap : first;
    while (c < need)
        c *= 2;
    char *b = realloc(*buf, c);
    if (!b)
        abort();
    *buf = b;
    *cap = c;
}

/* ---- CLUSTER NODES as a node writes it --------------------------------------------------- */

static void out_add(node_t *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_add(node_t *x, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = x->textcap - x->textlen;
        int n = vsnprintf(x->text ? x->text + x->textlen : NULL, room, fmt, ap);
        va_end(ap);
        if (n < 0)
            abort(); /* a format error: no room would do */
        if ((size_t)n < room) {
            x->textlen += (size_t)n;
            return;
        }
        text_reserve(&x->text, &x->textcap, x->textlen + (size_t)n + 1, 4096);
    }
}

/* The slot ranges of a slot table, in slot order: what each line's slots are (kept
 * until the table changes). */
typedef struct run {
    int from, to, owner;
} run_t;

static void runs_of(node_t *x)
{
    if (x->runs && x->runs_ver == x->tab_ver)
        return;
    x->nruns = 0;
    for (int s = 0; s < CN_SLOTS; s++) {
        if (x->owner[s] < 0)
            continue;
        if (x->nruns && x->runs[x->nruns - 1].to == s - 1 && x->runs[x->nruns - 1].owner == x->owner[s]) {
            x->runs[x->nruns - 1].to = s;
            continue;
        }
        if (x->nruns == x->capruns) {
            x->capruns = x->capruns ? 2 * x->capruns : 64;
            x->runs = realloc(x->runs, (size_t)x->capruns * sizeof(*x->runs));
            if (!x->runs)
                abort();
        }
        x->runs[x->nruns++] = (run_t){s, s, x->owner[s]};
    }
    x->runs_ver = x->tab_ver;
    if (!x->runs) /* (an empty table: cached all the same) */
        x->runs = malloc(sizeof(*x->runs));
}

static void line_of(sc_t *w, int xi, int yi)
{
    node_t *x = w->n[xi];
    int me = yi == xi, master = me ? x->master : x->vmaster[yi];
    char addr[64];
    if (x->vip[yi])
        snprintf(addr, sizeof(addr), "10.0.0.%d:6379@16379", x->vip[yi]);
    else
        snprintf(addr, sizeof(addr), ":0@0");
    out_add(x, "%s %s %s%s%s%s%s %s 0 0 %llu %s", w->n[yi]->id, addr, me ? "myself," : "",
            master >= 0 ? "slave" : "master", x->pfail[yi] ? ",fail?" : "", x->fail[yi] ? ",fail" : "",
            x->vip[yi] ? "" : ",noaddr", master >= 0 ? w->n[master]->id : "-",
            (unsigned long long)epoch_in(w, xi, yi), me || w->tick - x->pong[yi] <= 2 ? "connected" : "disconnected");
    for (int r = 0; r < x->nruns; r++) {
        if (x->runs[r].owner != yi)
            continue;
        if (x->runs[r].to > x->runs[r].from)
            out_add(x, " %d-%d", x->runs[r].from, x->runs[r].to);
        else
            out_add(x, " %d", x->runs[r].from);
    }
    for (int o = 0; me && o < x->nopen; o++)
        out_add(x, " [%d-%c-%s]", x->open[o].slot, x->open[o].importing ? '<' : '>', w->n[x->open[o].peer]->id);
    out_add(x, "\n");
}

/* Node xi's CLUSTER NODES (kept until its view changes). */
static const char *nodes_text(sc_t *w, int xi, size_t *len)
{
    node_t *x = w->n[xi];
    if (!x->text_ok || x->text_ver != x->view_ver) {
        x->textlen = 0;
        runs_of(x);
        line_of(w, xi, xi);
        for (int y = 0; y < w->nids; y++)
            if (y != xi && x->know[y])
                line_of(w, xi, y);
        for (int h = 0; h < x->nhs; h++)
            out_add(x, "%038x%02x 10.0.0.%d:6379@16379 handshake - 0 0 0 disconnected\n", 0, x->hs[h].ip & 0xff,
                    x->hs[h].ip);
        x->text_ok = 1;
        x->text_ver = x->view_ver;
    }
    *len = x->textlen;
    return x->text;
}

/* The number s starts with (0 when none). */
static int num(const char *s)
{
    return (int)strtol(s, NULL, 10);
}

static int parse_ip(const char *s)
{
    return !strncmp(s, "10.0.0.", 7) ? num(s + 7) : 0;
}

/* ---- commands, answered as Redis 7 answers them ------------------------------------------ */

typedef struct {
    char *b;
    size_t len, cap;
} resp_t;

static void resp_add(resp_t *r, const char *p, size_t n)
{
    text_reserve(&r->b, &r->cap, r->len + n + 1, 1024);
    memcpy(r->b + r->len, p, n);
    r->len += n;
    r->b[r->len] = '\0';
}

static void resp_fmt(resp_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void resp_fmt(resp_t *r, const char *fmt, ...)
{
    char b[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b, sizeof(b), fmt, ap);
    va_end(ap);
    resp_add(r, b, n < (int)sizeof(b) ? (size_t)n : sizeof(b) - 1);
}

static resp_t resp_buf;

static int err_reply(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int err_reply(const char *fmt, ...)
{
    char b[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof(b), fmt, ap);
    va_end(ap);
    resp_buf.len = 0;
    resp_fmt(&resp_buf, "-%s\r\n", b);
    return -1;
}

static int ok_reply(void)
{
    resp_buf.len = 0;
    resp_fmt(&resp_buf, "+OK\r\n");
    return 0;
}

static int find_id(const sc_t *w, const char *id)
{
    return by_id(w, id, strlen(id));
}

/* The ranges "a b [a b ...]" of argv[from..argc) checked (every slot not owned: want -1,
 * else owned by anyone) then set to o. */
static int slots_ranges(sc_t *w, int xi, int argc, const char *const *argv, int from, int adding)
{
    node_t *x = w->n[xi];
    if (argc <= from || (argc - from) % 2)
        return err_reply("ERR wrong number of arguments");
    for (int a = from; a < argc; a += 2) {
        int lo = num(argv[a]), hi = num(argv[a + 1]);
        if (lo < 0 || hi >= CN_SLOTS || lo > hi)
            return err_reply("ERR Invalid or out of range slot");
        for (int s = lo; s <= hi; s++) {
            if (adding && x->owner[s] >= 0)
                return err_reply("ERR Slot %d is already busy", s);
            if (!adding && x->owner[s] < 0)
                return err_reply("ERR Slot %d is already unassigned", s);
        }
    }
    for (int a = from; a < argc; a += 2)
        for (int s = num(argv[a]); s <= num(argv[a + 1]); s++)
            set_owner(w, xi, s, adding ? xi : -1);
    return ok_reply();
}

/* The node id that node xi knows, not xi itself (CLUSTER FORGET's and REPLICATE's
 * argument): its index, or -1 with the error reply set ("Unknown node", or self_err). */
static int known_other(const sc_t *w, int xi, const char *id, const char *self_err)
{
    int z = find_id(w, id);
    if (z < 0 || !w->n[xi]->know[z])
        return err_reply("ERR Unknown node %s", id);
    if (z == xi)
        return err_reply("%s", self_err);
    return z;
}

static int cmd_forget(sc_t *w, int xi, const char *id)
{
    node_t *x = w->n[xi];
    int z = known_other(w, xi, id, "ERR I tried hard but I can't forget myself...");
    if (z < 0)
        return -1;
    if (x->master == z)
        return err_reply("ERR Can't forget my master!");
    for (int s = 0; s < CN_SLOTS; s++)
        if (x->owner[s] == z)
            set_owner(w, xi, s, -1);
    for (int o = 0; o < x->nopen;)
        if (x->open[o].peer == z)
            x->open[o] = x->open[--x->nopen];
        else
            o++;
    x->know[z] = x->pfail[z] = x->fail[z] = 0;
    x->vip[z] = 0;
    x->forgot[z] = w->tick + 600;
    bump(w, x);
    return ok_reply();
}

static int cmd_replicate(sc_t *w, int xi, const char *id)
{
    node_t *x = w->n[xi];
    int m = known_other(w, xi, id, "ERR Can't replicate myself");
    if (m < 0)
        return -1;
    if (x->vmaster[m] >= 0)
        return err_reply("ERR I can only replicate a master, not a replica.");
    if (x->master < 0 && (x->nmine || has_keys(x)))
        return err_reply("ERR To set a master the node must be empty and without assigned slots.");
    if (x->master != m)
        set_master(w, xi, m);
    return ok_reply();
}

/* CLUSTER FAILOVER [FORCE|TAKEOVER] on replica xi: a coordinated failover (the master
 * reachable: it pauses, the replica catches up, then the vote); FORCE skips the master
 * (the vote alone, granted without FAIL); TAKEOVER skips the vote too (a new epoch). */
static int cmd_failover(sc_t *w, int xi, const char *how)
{
    node_t *x = w->n[xi];
    int force = how && !strcasecmp(how, "FORCE"), takeover = how && !strcasecmp(how, "TAKEOVER");
    if (x->master < 0)
        return err_reply("ERR You should send CLUSTER FAILOVER to a replica");
    if (!force && !takeover && (x->fail[x->master] || !reach(w, xi, x->master)))
        return err_reply("ERR Master is down or failed, please use CLUSTER FAILOVER FORCE");
    if (takeover) {
        promote(w, xi, x->cur + 1, 1);
        return ok_reply();
    }
    x->mf_at = w->tick + sim_rng_range(&w->rng, 1, 3);
    x->mf_force = force;
    return ok_reply();
}

/* RESET HARD: a new node id, knowing nobody; a replica's data flushed. */
static int cmd_reset(sc_t *w, int xi)
{
    node_t *x = w->n[xi];
    if (x->master < 0 && has_keys(x))
        return err_reply("ERR CLUSTER RESET can't be called with master nodes containing keys");
    int p = x->pod, ni = new_node(w, p);
    if (ni < 0)
        return err_reply("ERR simulation: out of node ids");
    x->alive = 0;
    w->n[ni]->alive = 1;
    w->pod[p].id = ni;
    w->topo_ver++;
    ev(w, 14, xi, ni, "pod %d: CLUSTER RESET HARD: node %d becomes node %d", p, xi, ni);
    return ok_reply();
}

/* SETSLOT s IMPORTING|MIGRATING z on node xi. */
static int setslot_open(sc_t *w, int xi, int s, int z, int importing)
{
    node_t *x = w->n[xi];
    open_t *op = open_of(x, s);
    if (importing && x->owner[s] == xi)
        return err_reply("ERR I'm already the owner of hash slot %d", s);
    if (!importing && x->owner[s] != xi)
        return err_reply("ERR I'm not the owner of hash slot %d", s);
    if (!op) {
        if (x->nopen == MAXOPEN)
            return err_reply("ERR simulation: too many open slots");
        op = &x->open[x->nopen++];
    }
    *op = (open_t){s, importing, z};
    bump(w, x);
    return ok_reply();
}

/* clusterBumpConfigEpochWithoutConsensus: a new epoch unless node xi's is the greatest. */
static void bump_epoch(sc_t *w, int xi, int s)
{
    node_t *x = w->n[xi];
    uint64_t max = x->cur;
    for (int o = 0; o < w->nids; o++)
        if (x->know[o] && x->vepoch[o] > max)
            max = x->vepoch[o];
    if (x->epoch == 0 || x->epoch != max) {
        x->cur = max + 1;
        x->epoch = x->cur;
        x->claims_ver++;
        ev(w, 15, xi, (int64_t)x->epoch, "node %d: epoch %llu after importing slot %d", xi,
           (unsigned long long)x->epoch, s);
    }
}

/* clusterBroadcastPong(CLUSTER_BROADCAST_ALL): every node xi reaches hears its header and
 * claims now (Redis sends it when SETSLOT NODE closes an import, so that the target's
 * replicas and the other masters learn its new slots and epoch within a round trip). */
static void broadcast_pong(sc_t *w, int xi)
{
    for (int yi = 0; yi < w->nids; yi++)
        if (yi != xi && reach(w, xi, yi) && w->n[yi]->know[xi])
            contact(w, yi, xi, 0);
}

/* SETSLOT s NODE z on node xi. */
static int setslot_node(sc_t *w, int xi, int s, int z)
{
    node_t *x = w->n[xi];
    open_t *op = open_of(x, s);
    int was_mine = x->owner[s] == xi;
    if (was_mine && z != xi && keys_in(w, x, s))
        return err_reply("ERR Can't assign hashslot %d to a different node while I still hold keys for this hash "
                         "slot.", s);
    if (op && !op->importing && z != xi && !keys_in(w, x, s))
        close_slot(w, x, s);
    int imported = z == xi && op && op->importing;
    if (imported) {
        close_slot(w, x, s);
        bump_epoch(w, xi, s);
    }
    set_owner(w, xi, s, z);
    if (imported && !w->cfg.no_broadcast) /* Redis 7: "let the other nodes know as soon as possible" */
        broadcast_pong(w, xi);
    if (was_mine && z != xi && !x->nmine) { /* cluster-allow-replica-migration */
        ev(w, 16, xi, z, "node %d gave its last slot away: follows node %d", xi, z);
        set_master(w, xi, z);
    }
    return ok_reply();
}

static int cmd_setslot(sc_t *w, int xi, int argc, const char *const *argv)
{
    node_t *x = w->n[xi];
    int stable = argc == 4 && !strcasecmp(argv[3], "STABLE");
    if (argc < 5 && !stable)
        return err_reply("ERR wrong number of arguments");
    if (x->master >= 0)
        return err_reply("ERR Please use SETSLOT only with masters.");
    int s = num(argv[2]);
    if (stable) { /* the slot's IMPORTING/MIGRATING mark cleared, nothing else */
        close_slot(w, x, s);
        return ok_reply();
    }
    int z = find_id(w, argv[4]);
    if (z < 0 || !x->know[z])
        return err_reply("ERR I don't know about node %s", argv[4]);
    if (!strcasecmp(argv[3], "IMPORTING") || !strcasecmp(argv[3], "MIGRATING"))
        return setslot_open(w, xi, s, z, !strcasecmp(argv[3], "IMPORTING"));
    return setslot_node(w, xi, s, z);
}

static int cmd_getkeys(sc_t *w, int xi, int s)
{
    node_t *x = w->n[xi];
    resp_buf.len = 0;
    resp_fmt(&resp_buf, "*%d\r\n", keys_in(w, x, s));
    for (int k = 0; k < NKEYS; k++)
        if (w->kslot[k] == s && x->val[k]) {
            char name[16];
            int n = snprintf(name, sizeof(name), "k%d", k);
            resp_fmt(&resp_buf, "$%d\r\n%s\r\n", n, name);
        }
    return 0;
}

/* MIGRATE host port "" 0 timeout [REPLACE] [AUTH pw] KEYS k...; cut (the operator killed
 * while it ran): the keys copied, not yet deleted. */
static int cmd_migrate(sc_t *w, int xi, int argc, const char *const *argv, int cut)
{
    node_t *x = w->n[xi];
    int t = node_at(w, parse_ip(argv[1]), x->pod), replace = 0, from = argc;
    for (int a = 6; a < argc; a++) {
        if (!strcasecmp(argv[a], "REPLACE"))
            replace = 1;
        if (!strcasecmp(argv[a], "KEYS")) {
            from = a + 1;
            break;
        }
    }
    if (t < 0)
        return err_reply("IOERR error or timeout connecting to the client");
    node_t *tn = w->n[t];
    int moved = 0;
    for (int a = from; a < argc; a++) {
        int k = num(argv[a] + 1), s = w->kslot[k];
        if (!x->val[k])
            continue;
        open_t *op = open_of(tn, s);
        if (tn->master >= 0 || (tn->owner[s] != t && !(op && op->importing)))
            return err_reply("ERR Target instance replied with error: MOVED %d 10.0.0.%d:6379", s,
                             tn->owner[s] >= 0 ? pod_ip(w, w->n[tn->owner[s]]->pod) : 0);
        if (tn->val[k] && !replace)
            return err_reply("ERR Target instance replied with error: BUSYKEY Target key name already exists.");
        put(tn, k, x->val[k]);
        if (!cut)
            put(x, k, 0);
        moved++;
        w->res.keys_moved++;
    }
    if (cut)
        return err_reply("IOERR the operator was killed");
    resp_buf.len = 0;
    resp_fmt(&resp_buf, moved ? "+OK\r\n" : "+NOKEY\r\n");
    return 0;
}

static const char *info_of(sc_t *w, int xi, char *buf, size_t cap);
static int cmd_wait(sc_t *w, int xi);

/* INFO replication or WAIT on node xi. */
static int cmd_replication(sc_t *w, int xi, const char *cmd)
{
    char text[2048];
    if (!strcasecmp(cmd, "WAIT"))
        return cmd_wait(w, xi);
    size_t len = strlen(info_of(w, xi, text, sizeof(text)));
    resp_buf.len = 0;
    resp_fmt(&resp_buf, "$%zu\r\n", len);
    resp_add(&resp_buf, text, len);
    resp_add(&resp_buf, "\r\n", 2);
    return 0;
}

/* One command on node xi. Returns 0 (the answer in resp_buf) or -1 (an error answer). */
static int cluster_cmd(sc_t *w, int xi, int argc, const char *const *argv);

static int exec_cmd(sc_t *w, int xi, int argc, const char *const *argv, int cut)
{
    node_t *x = w->n[xi];
    if (!strcasecmp(argv[0], "INFO") || !strcasecmp(argv[0], "WAIT"))
        return cmd_replication(w, xi, argv[0]);
    if (!strcasecmp(argv[0], "FLUSHALL")) {
        if (x->master >= 0) /* replica-read-only */
            return err_reply("READONLY You can't write against a read only replica.");
        for (int k = 0; k < NKEYS; k++)
            if (x->val[k])
                put(x, k, 0);
        return ok_reply();
    }
    if (!strcasecmp(argv[0], "MIGRATE"))
        return argc < 7 ? err_reply("ERR wrong number of arguments") : cmd_migrate(w, xi, argc, argv, cut);
    if (strcasecmp(argv[0], "CLUSTER") || argc < 2)
        return err_reply("ERR unknown command");
    return cluster_cmd(w, xi, argc, argv);
}

/* CLUSTER <argv[1]> ... on node xi. */
static int cluster_cmd(sc_t *w, int xi, int argc, const char *const *argv)
{
    node_t *x = w->n[xi];
    const char *v = argv[1];
    if (!strcasecmp(v, "NODES")) {
        size_t len;
        const char *t = nodes_text(w, xi, &len);
        resp_buf.len = 0;
        resp_fmt(&resp_buf, "$%zu\r\n", len);
        resp_add(&resp_buf, t, len);
        resp_add(&resp_buf, "\r\n", 2);
        return 0;
    }
    if (!strcasecmp(v, "MEET") && argc >= 3) {
        start_handshake(w, x, parse_ip(argv[2]));
        return ok_reply();
    }
    if (!strcasecmp(v, "FORGET") && argc >= 3)
        return cmd_forget(w, xi, argv[2]);
    if (!strcasecmp(v, "ADDSLOTSRANGE"))
        return slots_ranges(w, xi, argc, argv, 2, 1);
    if (!strcasecmp(v, "DELSLOTSRANGE"))
        return slots_ranges(w, xi, argc, argv, 2, 0);
    if (!strcasecmp(v, "REPLICATE") && argc >= 3)
        return cmd_replicate(w, xi, argv[2]);
    if (!strcasecmp(v, "FAILOVER"))
        return cmd_failover(w, xi, argc >= 3 ? argv[2] : NULL);
    if (!strcasecmp(v, "RESET"))
        return cmd_reset(w, xi);
    if (!strcasecmp(v, "BUMPEPOCH")) { /* Redis 7: a new epoch unless already the only highest */
        uint64_t max = x->cur;
        for (int o = 0; o < w->nids; o++)
            if (o != xi && x->know[o] && x->vepoch[o] > max)
                max = x->vepoch[o];
        if (x->epoch == 0 || x->epoch != max) {
            x->cur = (max > x->cur ? max : x->cur) + 1;
            x->epoch = x->cur;
            x->claims_ver++; /* its next PINGs carry the new epoch (finding 10: without these */
            bump(w, x);      /* two, its own CLUSTER NODES kept saying epoch 0) */
            ev(w, 5, xi, (int64_t)x->epoch, "node %d: BUMPEPOCH to %llu", xi, (unsigned long long)x->epoch);
        }
        return ok_reply();
    }
    if (!strcasecmp(v, "SETSLOT"))
        return cmd_setslot(w, xi, argc, argv);
    if (!strcasecmp(v, "GETKEYSINSLOT") && argc >= 3)
        return cmd_getkeys(w, xi, num(argv[2]));
    return err_reply("ERR unknown subcommand '%s'", v);
}

static redisReply *reply_of_buf(void)
{
    redisReader *rd = redisReaderCreate();
    void *r = NULL;
    if (!rd)
        abort();
    redisReaderFeed(rd, resp_buf.b, resp_buf.len);
    if (redisReaderGetReply(rd, &r) != REDIS_OK || !r)
        abort();
    redisReaderFree(rd);
    return r;
}

/* ---- workerd: the operator's decisions applied to the model ------------------------------ */

/* MULTI ... EXEC on the operator's connection to a node (slotmove's CLOSING): the commands
 * queued as text, run at EXEC one after the other with nothing in between; dropped with
 * the connection when the operator is killed before EXEC. */
#define TXN_MAX (2 * SLOTMOVE_MAX_GROUP)
static struct {
    int node; /* the node MULTI went to; -1 none */
    int n;
    int argc[TXN_MAX];
    char argv[TXN_MAX][5][48];
} txn = {.node = -1};
static resp_t txn_out;

/* MULTI, a command while one is open, or EXEC on node xi: the answer in resp_buf. */
static void txn_command(sc_t *w, int xi, int argc, const char *const *argv)
{
    if (!strcasecmp(argv[0], "MULTI")) {
        txn.node = xi;
        txn.n = 0;
        ok_reply();
        return;
    }
    if (strcasecmp(argv[0], "EXEC")) {
        if (txn.n == TXN_MAX || argc > 5) {
            err_reply("ERR simulation: transaction too large");
            return;
        }
        txn.argc[txn.n] = argc;
        for (int a = 0; a < argc; a++)
            snprintf(txn.argv[txn.n][a], sizeof(txn.argv[txn.n][a]), "%s", argv[a]);
        txn.n++;
        resp_buf.len = 0;
        resp_fmt(&resp_buf, "+QUEUED\r\n");
        return;
    }
    txn_out.len = 0;
    resp_fmt(&txn_out, "*%d\r\n", txn.n);
    for (int q = 0; q < txn.n; q++) {
        const char *args[5];
        for (int a = 0; a < txn.argc[q]; a++)
            args[a] = txn.argv[q][a];
        exec_cmd(w, xi, txn.argc[q], args, 0);
        resp_add(&txn_out, resp_buf.b, resp_buf.len);
    }
    txn.node = -1;
    resp_buf.len = 0;
    resp_add(&resp_buf, txn_out.b, txn_out.len);
}

static void operator_crash(sc_t *w, const char *where)
{
    txn.node = -1; /* its connections closed: Redis drops what they had queued */
    w->crash_armed = 0;
    w->op_down_until = w->tick + sim_rng_range(&w->rng, 10, 50);
    ev(w, 20, 0, 0, "operator killed %s; back at %lld", where, (long long)w->op_down_until);
}

/* 1 when the armed crash happens at this command. */
static int crash_here(sc_t *w)
{
    return w->crash_armed && w->crash_after-- <= 0;
}

static redisReply *io_command(void *user, int to, int argc, const char *const *argv, const size_t *lens, char *err,
                              size_t errlen)
{
    (void)lens;
    void **u = user;
    sc_t *w = u[0];
    const slotmove_job_t *job = u[1];
    if (!strcasecmp(argv[0], "MEMORY")) { /* (slotmove's SIZES: every key the same) */
        resp_buf.len = 0;
        resp_fmt(&resp_buf, ":80\r\n");
        return reply_of_buf();
    }
    if (w->tick < w->op_down_until) {
        snprintf(err, errlen, "the operator is dead");
        return NULL;
    }
    const slotmove_node_t *n = slotmove_node(job, to);
    int migrate = !strcasecmp(argv[0], "MIGRATE");
    w->clock_ns += migrate ? 3000000 : !strcasecmp(argv[0], "WAIT") ? SLOTMOVE_ACK_WAIT_MS * 1000000 : 1000000;
    int cut = crash_here(w), xi = node_at(w, parse_ip(n->ip), -1);
    if (xi < 0 || (cut && !migrate)) {
        if (cut)
            operator_crash(w, "mid slot move");
        snprintf(err, errlen, xi < 0 ? "Connection refused" : "the operator was killed");
        return NULL;
    }
    w->res.commands++;
    if (txn.node == xi || !strcasecmp(argv[0], "MULTI"))
        txn_command(w, xi, argc, argv);
    else
        exec_cmd(w, xi, argc, argv, cut);
    if (cut) {
        operator_crash(w, "in a MIGRATE (keys copied, not deleted)");
        snprintf(err, errlen, "the operator was killed");
        return NULL;
    }
    return reply_of_buf();
}

static int64_t io_now(void *user)
{
    void **u = user;
    return ((sc_t *)u[0])->clock_ns;
}

/* A move as plan_move makes its job (plan_cluster_move_job; SIM_NO_MOVE_WAIT: without
 * REPLICATED), run by slotmove_run over the model. Returns 0 when it ran to its end or its
 * budget, -1 when it stopped on a failure. */
static int run_move(sc_t *w, const ctopo_move_t *mv)
{
    static slotmove_job_t job;
    plan_cluster_move_job(w->in, mv, "sim", SLOTMOVE_DEFAULT_BATCH_BYTES, 0, !w->cfg.no_move_wait, &job);
    void *user[2] = {w, &job};
    slotmove_io_t io = {.command = io_command, .now_ns = io_now, .user = user};
    txn.node = -1; /* a run's connections are its own: nothing queued from an earlier one */
    slotmove_progress_t pr;
    char err[512];
    w->clock_ns = w->tick * 100000000LL;
    int rc = slotmove_run(&job, &io, NULL, &pr, err, sizeof(err));
    w->res.moves++;
    w->res.slots_moved += pr.slots_done;
    unsigned set = w->cfg.faults ? w->cfg.faults : SC_FAULTS_DEFAULT;
    if (pr.keys > 0 && (set & SC_FAULT_BIT(SC_F_KILL_TARGET)) && !w->kt_at && w->tick < w->end_faults &&
        (w->cfg.overlap || !w->fault_open) && sim_rng_chance(&w->rng, 1, 2)) {
        w->kt_pod = mv->target; /* (a pod index: the layout's) */
        w->kt_at = w->tick + sim_rng_range(&w->rng, 1, 3);
    }
    ev(w, 21, mv->source, mv->target, "slot move %s -> %s: %d slot(s) done, %d skipped, %lld keys%s%s",
       job.source.pod, job.target.pod, pr.slots_done, pr.skipped, (long long)pr.keys, rc < 0 ? ": " : "",
       rc < 0 ? err : "");
    return rc < 0 ? -1 : 0;
}

static void build_input(sc_t *w)
{
    ctopo_input_t *in = w->in;
    memset(in, 0, sizeof(*in));
    in->shards = w->shards;
    in->replicas = w->R;
    in->nshards = w->nsts;
    in->width = w->width;
    in->bootstrapped = w->bootstrapped;
    for (int k = 0; k < w->nsts; k++)
        in->sts_replicas[k] = w->width;
    for (int p = 0; p < w->nsts * w->width; p++) {
        const pod_t *pd = &w->pod[p];
        const obs_t *o = &w->obs[p];
        ctopo_pod_t *cp = &in->pod[p];
        snprintf(cp->pod, sizeof(cp->pod), "sim-shard%d-%d", p / w->width, p % w->width);
        cp->present = pd->present;
        cp->ready = pd->present && pd->running;
        cp->terminating = pd->terminating;
        snprintf(cp->ip, sizeof(cp->ip), "10.0.0.%d", pod_ip(w, p));
        cp->info = (cn_info_t){-1, -1, -1, -1, -1, -1, -1, -1, -1};
        cp->offset = -1;
        if (pd->present && o->got.probed <= w->last_cmd)
            in->stale = 1; /* FRESHNESS: not probed since the last command */
        if (pd->present && o->got.valid && o->got.ip == pod_ip(w, p) && o->view) {
            cp->observed = 1;
            cp->view = o->view;
            cp->info.state_ok = o->got.state_ok;
            cp->link_up = o->got.link_up;
            cp->offset = o->got.offset;
        }
    }
}

/* 1 when node ri is a replica linked to node t and synced from it (online). */
static int linked_to(const sc_t *w, int ri, int t)
{
    const node_t *r = w->n[ri];
    return ri != t && r->alive && r->master >= 0 && r->link_up && !r->syncing && r->synced_from == t &&
           r->replid == w->n[t]->replid && node_at(w, r->repl_ip, r->pod) == t;
}

/* INFO replication of node xi as Redis 7 writes the fields the operator reads (the
 * executor's guard of FAILOVER FORCE, a slot move's REPLICATED check), into buf. A
 * replica line's offset is the replica's own (acknowledged at once). */
static const char *info_of(sc_t *w, int xi, char *buf, size_t cap)
{
    const node_t *x = w->n[xi];
    size_t len = 0;
    if (x->master >= 0) {
        snprintf(buf, cap, "# Replication\r\nrole:slave\r\nmaster_host:10.0.0.%d\r\nmaster_port:6379\r\n"
                 "master_link_status:%s\r\nslave_repl_offset:%lld\r\nmaster_replid:%016llx\r\n"
                 "master_repl_offset:%lld\r\n", x->repl_ip, x->link_up ? "up" : "down", (long long)x->offset,
                 (unsigned long long)x->replid, (long long)x->offset);
        return buf;
    }
    int n = 0;
    for (int o = 0; o < w->nids; o++)
        n += linked_to(w, o, xi);
    len += (size_t)snprintf(buf, cap, "# Replication\r\nrole:master\r\nconnected_slaves:%d\r\n", n);
    n = 0;
    for (int o = 0; o < w->nids && len < cap; o++)
        if (linked_to(w, o, xi))
            len += (size_t)snprintf(buf + len, cap - len, "slave%d:ip=10.0.0.%d,port=6379,state=online,offset=%lld,"
                                    "lag=0\r\n", n++, pod_ip(w, w->n[o]->pod), (long long)w->n[o]->offset);
    if (len < cap)
        snprintf(buf + len, cap - len, "master_replid:%016llx\r\nmaster_repl_offset:%lld\r\n",
                 (unsigned long long)x->replid, (long long)x->offset);
    return buf;
}

/* INFO replication of pod p's node, NULL when the operator cannot reach it. */
static const char *info_replication(sc_t *w, int p, char *buf, size_t cap)
{
    int xi = node_at(w, pod_ip(w, p), -1);
    return xi < 0 ? NULL : info_of(w, xi, buf, cap);
}

/* WAIT on node xi: a replica linked to it receives and acknowledges what it holds within
 * the WAIT's few milliseconds (a healthy link); the answer is how many did. */
static int cmd_wait(sc_t *w, int xi)
{
    int n = 0;
    for (int o = 0; o < w->nids; o++)
        if (linked_to(w, o, xi)) {
            memcpy(w->n[o]->val, w->n[xi]->val, sizeof(w->n[o]->val));
            w->n[o]->offset = w->n[xi]->offset;
            n++;
        }
    resp_buf.len = 0;
    resp_fmt(&resp_buf, ":%d\r\n", n);
    return 0;
}

/* The executor's guard of CLUSTER FAILOVER FORCE (redisexec_force_check) on the model,
 * from what it reads (the replica's CLUSTER NODES, each candidate's INFO replication):
 * 0 when it may go, -1 with its words in resp_buf. */
static int force_guard(sc_t *w, const ctopo_cmd_t *c)
{
    char text[1 + CTOPO_MAX_REPLICAS][512], err[512];
    const char *info[1 + CTOPO_MAX_REPLICAS], *pod[1 + CTOPO_MAX_REPLICAS];
    int n = 0;
    info[n] = info_replication(w, c->pod, text[n], sizeof(text[n]));
    pod[n++] = w->in->pod[c->pod].pod;
    for (int k = 0; k < c->npeers && n < 1 + CTOPO_MAX_REPLICAS; k++) {
        info[n] = info_replication(w, c->peer[k], text[n], sizeof(text[n]));
        pod[n++] = w->in->pod[c->peer[k]].pod;
    }
    int xi = node_at(w, pod_ip(w, c->pod), -1);
    size_t len = 0;
    const char *t = xi < 0 ? NULL : nodes_text(w, xi, &len);
    char *nodes = t ? strndup(t, len) : NULL;
    int rc = redisexec_force_check(nodes, c->gone, info, pod, (size_t)n, err, sizeof(err));
    free(nodes);
    if (!rc)
        return 0;
    resp_buf.len = 0;
    resp_fmt(&resp_buf, "(the executor's guard) %s", err);
    return -1;
}

/* 1 when c is CLUSTER FAILOVER FORCE. */
static int is_force(const ctopo_cmd_t *c)
{
    return c->kind == CTOPO_FAILOVER && c->argc == 3 && !strcasecmp(c->argv[2], "FORCE");
}

/* The commands of the plan, in order; the first refusal or unreachable node stops it.
 * Returns 0, -1 when stopped, -2 when the operator was killed. */
static int run_commands(sc_t *w)
{
    const ctopo_result_t *r = w->out;
    for (size_t i = 0; i < r->ncmds; i++) {
        const ctopo_cmd_t *c = &r->cmd[i];
        if (crash_here(w)) {
            operator_crash(w, "between two commands of a plan");
            return -2;
        }
        const char *argv[CTOPO_MAX_ARGS];
        char line[256] = "";
        for (int a = 0; a < c->argc; a++) {
            argv[a] = c->argv[a];
            size_t l = strlen(line);
            snprintf(line + l, sizeof(line) - l, "%s%s", a ? " " : "", c->argv[a]);
        }
        int xi = node_at(w, pod_ip(w, c->pod), -1);
        int guarded = xi >= 0 && is_force(c) && !w->cfg.no_force_guard && force_guard(w, c);
        int rc = xi < 0 || guarded ? -1 : exec_cmd(w, xi, c->argc, argv, 0);
        w->res.commands++;
        w->last_cmd = w->tick; /* COMMAND RECORD: the status says it; observerd probes all */
        w->probe_all = 1;
        w->in_ver++;
        ev(w, 22, c->pod, rc, "operator: pod %d (node %d): %s -> %s%s%s", c->pod, xi, line,
           xi < 0 ? "connection refused" : rc ? resp_buf.b : "OK", w->cfg.trace_why ? "  # " : "",
           w->cfg.trace_why ? c->why : "");
        if (rc && !(xi >= 0 && !guarded && redisexec_done_already(c->argc, argv, resp_buf.b))) {
            w->res.refused++;
            return -1;
        }
    }
    return 0;
}

/* The operator's layout dropped a leaving shard: its StatefulSet and pods deleted. */
static void drop_shard(sc_t *w)
{
    int k = --w->nsts;
    for (int p = k * w->width; p < (k + 1) * w->width; p++) {
        if (w->pod[p].id >= 0)
            w->n[w->pod[p].id]->alive = 0;
        memset(&w->pod[p], 0, sizeof(w->pod[p]));
        w->pod[p].id = -1;
        free(w->obs[p].got.text);
        free(w->obs[p].pending.text);
        cn_view_destroy(&w->obs[p].view);
        memset(&w->obs[p], 0, sizeof(w->obs[p]));
    }
    w->res.reshards_done++;
    w->topo_ver++;
    w->in_ver++;
    ev(w, 23, k, 0, "shard %d's StatefulSet deleted (the layout dropped it)", k);
}

/* A reconcile. ctopo_compute is pure: from the very input of the last one (no news,
 * the same layout) it would decide the same, so its result is taken again. */
static void reconcile(sc_t *w)
{
    ctopo_result_t *r = w->out;
    uint32_t ver = w->in_ver;
    if (ver != w->memo_ver || !w->res.reconciles) {
        build_input(w);
        if (ctopo_compute(w->in, r)) {
            fail_now(w, "ctopo_compute refused the layout");
            return;
        }
        w->memo_ver = ver;
        w->res.decisions++;
        if (w->cfg.trace && w->cfg.trace_why > 1)
            fprintf(w->cfg.trace, "%lld decided: %s (%s)%s, %zu commands, %zu moves\n", (long long)w->tick, r->reason,
                    r->message, w->in->stale ? " [stale look: waits]" : "", r->ncmds, r->nmoves);
    }
    w->res.reconciles++;
    if (w->crash_armed)
        w->crash_after = (int)sim_rng_below(&w->rng, (int64_t)r->ncmds + 40);
    int rc = run_commands(w);
    for (size_t m = 0; m < r->nmoves && !rc; m++) {
        rc = run_move(w, &r->moves[m]);
        if (w->tick < w->op_down_until)
            rc = -2;
    }
    if (rc == -2)
        return;
    if (r->bootstrapped && !w->bootstrapped)
        ev(w, 24, 0, 0, "status: bootstrapped");
    w->in_ver += r->bootstrapped && !w->bootstrapped;
    w->bootstrapped |= r->bootstrapped;
    if (w->nsts > w->shards && r->nshards == w->nsts && !r->keep_shard[w->nsts - 1])
        drop_shard(w);
    w->requeue_at = w->tick + (r->nmoves ? 1 : r->waiting || r->ncmds ? 20 : 300);
}

/* ---- observerd ------------------------------------------------------------------------- */

static int snap_same(const snap_t *a, const snap_t *b)
{
    return a->valid == b->valid && a->ip == b->ip && a->state_ok == b->state_ok && a->link_up == b->link_up &&
           ((!a->text && !b->text) || (a->text && b->text && !strcmp(a->text, b->text)));
}

static void observe(sc_t *w, int p)
{
    obs_t *o = &w->obs[p];
    snap_t s = {0};
    const pod_t *pd = &w->pod[p];
    if (pd->running && !pd->isolated) {
        size_t len;
        int xi = pd->id;
        const char *t = nodes_text(w, xi, &len);
        s.valid = 1;
        s.ip = pod_ip(w, p);
        s.state_ok = state_ok(w, xi);
        s.link_up = w->n[xi]->master >= 0 && w->n[xi]->link_up;
        s.offset = w->n[xi]->offset;
        s.text = strndup(t, len);
        if (!s.text)
            abort();
    }
    s.probed = w->tick;
    const snap_t *last = o->has_pending ? &o->pending : &o->got;
    /* nothing new (an offset alone is not news), unless what was sent predates the last
     * command: observerd sends the first look probed wholly after it even without news */
    if (snap_same(&s, last) && (o->has_pending || o->got.probed > w->last_cmd)) {
        free(s.text);
        return;
    }
    int64_t due = w->tick + (w->tick < w->stall_until ? sim_rng_range(&w->rng, w->stall_late, w->stall_hi)
                                                     : sim_rng_range(&w->rng, 0, 20));
    if (o->has_pending) {
        free(o->pending.text);
        if (o->due > due)
            due = o->due;
    }
    o->pending = s;
    o->due = due;
    o->has_pending = 1;
}

static void deliver(sc_t *w, int p)
{
    obs_t *o = &w->obs[p];
    if (!o->has_pending || w->tick < o->due)
        return;
    free(o->got.text);
    o->got = o->pending;
    o->pending.text = NULL;
    o->has_pending = 0;
    cn_view_destroy(&o->view);
    if (o->got.text) {
        char err[256];
        if (cn_parse(o->got.text, strlen(o->got.text), &o->view, err, sizeof(err)))
            fail_now(w, "pod %d: the model's CLUSTER NODES does not parse: %s", p, err);
    }
    w->obs_news = 1;
    w->in_ver++;
}

/* ---- pods and faults ------------------------------------------------------------------- */

const char *sc_fault_name(int f)
{
    static const char *const names[] = {"kill-master", "kill-replica",   "lose-conf", "stale-aof",
                                        "lose-conf-early", "lose-leaving", "delete-master", "partition",
                                        "operator-crash", "obs-late", "obs-stall", "kill-target"};
    return f >= 0 && f < SC_F_COUNT ? names[f] : "unknown";
}

/* A pod changed (Ready, deleted, recreated): the watch queues the RedisCluster's key. */
static void pod_event(sc_t *w)
{
    w->obs_news = 1;
    w->in_ver++;
    w->topo_ver++;
}

/* Start pod p's container: its node (a new one without nodes.conf), its keys from the
 * AOF or none. A node without nodes.conf but with keys claims their slots at epoch 0. */
static void start_pod(sc_t *w, int p, int new_id, int with_data)
{
    pod_t *pd = &w->pod[p];
    int old = pd->id, xi = old;
    if (pd->restart_new_ip && w->next_ip < 250)
        pd->ip = w->next_ip++;
    pd->restart_new_ip = 0;
    if (new_id || old < 0) {
        xi = new_node(w, p);
        if (xi < 0) {
            fail_now(w, "simulation: out of node ids");
            return;
        }
        if (old >= 0 && with_data)
            memcpy(w->n[xi]->val, w->n[old]->val, sizeof(w->n[xi]->val));
        pd->id = xi;
    }
    node_t *x = w->n[xi];
    if (!with_data)
        memset(x->val, 0, sizeof(x->val));
    x->vip[xi] = pd->ip;
    x->alive = 1;
    x->replid = sim_rng_next(&w->rng);
    x->offset = 0;
    x->link_up = x->syncing = 0;
    x->synced_from = -1;
    x->link_down_since = w->tick;
    x->elect_at = x->mf_at = 0;
    x->nhs = 0;
    for (int y = 0; y < w->nids; y++) {
        x->pong[y] = w->tick;
        x->pfail[y] = 0;
    }
    if (xi != old || !with_data)
        for (int k = 0; k < NKEYS; k++)
            if (x->master < 0 && x->val[k] && x->owner[w->kslot[k]] < 0)
                set_owner(w, xi, w->kslot[k], xi);
    pd->running = 1;
    pd->restart_at = 0;
    bump(w, x);
    pod_event(w);
    ev(w, 30, p, xi, "pod %d started at %d: node %d%s, %s", p, pd->ip, xi, xi != old ? " (a new node id)" : "",
       with_data ? "its AOF" : "no data");
}

static void kill_pod(sc_t *w, int p, int64_t back_in, int new_id, int with_data)
{
    pod_t *pd = &w->pod[p];
    pd->running = 0;
    w->n[pd->id]->alive = 0;
    pd->restart_at = w->tick + back_in;
    pd->restart_new_id = new_id;
    pd->restart_data = with_data;
    pod_event(w);
    ev(w, 31, p, pd->id, "pod %d (node %d) SIGKILLed; back in %lld steps%s%s", p, pd->id, (long long)back_in,
       new_id ? " without nodes.conf" : "", with_data ? "" : ", without its AOF");
}

/* A running pod whose node is a master holding slots (want 1) or a replica (want 0), of
 * the 3 shards the spec always keeps (where 0), of the 4th, which it drops at half the run
 * (where 1), or of any (where -1); or -1. */
static int pick_in(sc_t *w, int want_master, int where)
{
    int c[MAXPOD], n = 0;
    for (int p = 0; p < MAXPOD; p++) {
        const pod_t *pd = &w->pod[p];
        if (!pd->present || !pd->running || pd->isolated || pd->terminating ||
            (where >= 0 && (p / w->width >= BASE_SHARDS) != where))
            continue;
        const node_t *x = w->n[pd->id];
        if (want_master ? x->master < 0 && x->nmine > 0 : x->master >= 0)
            c[n++] = p;
    }
    return n ? c[sim_rng_below(&w->rng, n)] : -1;
}

static int pick_pod(sc_t *w, int want_master)
{
    return pick_in(w, want_master, -1);
}

static int inject(sc_t *w, int f)
{
    int p = -1;
    switch (f) {
    case SC_F_KILL_MASTER:
        if ((p = pick_pod(w, 1)) >= 0)
            kill_pod(w, p, sim_rng_range(&w->rng, 5, 60), 0, 1);
        break;
    case SC_F_KILL_REPLICA: {
        int lose = (int)sim_rng_below(&w->rng, 2);
        if (lose && w->nids > MAXID - 8)
            return 0;
        if ((p = pick_pod(w, 0)) >= 0)
            kill_pod(w, p, sim_rng_range(&w->rng, 5, 60), lose, !lose);
        break;
    }
    case SC_F_LOSE_CONF:
    case SC_F_STALE_AOF:
    case SC_F_LOSE_CONF_EARLY:
    case SC_F_LOSE_LEAVING: {
        int master = f != SC_F_STALE_AOF || sim_rng_below(&w->rng, 2);
        int64_t back = f == SC_F_LOSE_CONF_EARLY ? sim_rng_range(&w->rng, 5, 25)
                       : master                 ? sim_rng_range(&w->rng, 100, 200)
                                                : sim_rng_range(&w->rng, 5, 60);
        int aof = f == SC_F_STALE_AOF || f == SC_F_LOSE_CONF_EARLY; /* (early: the volume kept, the default) */
        if (w->nids > MAXID - 8)
            return 0;
        int where = f == SC_F_LOSE_LEAVING ? 1 : f == SC_F_LOSE_CONF && master ? 0 : -1;
        if (f == SC_F_LOSE_LEAVING && w->shards >= w->nsts)
            return 0; /* (only while the 4th shard leaves) */
        if ((p = pick_in(w, master, where)) >= 0)
            kill_pod(w, p, back, 1, aof);
        break;
    }
    case SC_F_DELETE_MASTER:
        if ((p = pick_in(w, 1, 0)) >= 0) {
            w->pod[p].terminating = 1;
            w->pod[p].term_at = w->tick + 300;
            pod_event(w);
            ev(w, 36, p, w->pod[p].id, "pod %d (node %d) deleted: terminating", p, w->pod[p].id);
        }
        break;
    case SC_F_PARTITION:
        if ((p = pick_pod(w, (int)sim_rng_below(&w->rng, 2))) >= 0) {
            w->pod[p].isolated = 1;
            w->pod[p].isolated_until = w->tick + sim_rng_range(&w->rng, 10, 150);
            w->topo_ver++;
            ev(w, 32, p, w->pod[p].isolated_until, "pod %d cut off until %lld", p, (long long)w->pod[p].isolated_until);
        }
        break;
    case SC_F_OPERATOR_CRASH:
        w->crash_armed = 1;
        p = 0;
        ev(w, 33, 0, 0, "the operator will be killed in its next reconcile");
        break;
    default:
        w->stall_until = w->tick + sim_rng_range(&w->rng, 50, 300);
        w->stall_late = f == SC_F_OBS_STALL ? 30 : 10;
        w->stall_hi = f == SC_F_OBS_STALL ? 100 : 25;
        p = 0;
        ev(w, 34, 0, w->stall_until, "observations late until %lld", (long long)w->stall_until);
        break;
    }
    return p >= 0;
}

/* Pods and nodes back at rest: every pod running and reachable, every replica synced,
 * no failure flag on a current node. A fault of the kinds that hurt nodes waits for it. */
static int settled(const sc_t *w)
{
    for (int k = 0; k < w->nsts; k++) {
        int m = -1;
        for (int p = k * w->width; p < (k + 1) * w->width; p++) {
            const pod_t *pd = &w->pod[p];
            if (!pd->running || pd->isolated || pd->terminating)
                return 0;
            if (w->n[pd->id]->master < 0) {
                if (m >= 0)
                    return 0;
                m = pd->id;
            }
        }
        for (int p = k * w->width; p < (k + 1) * w->width; p++) {
            const node_t *x = w->n[w->pod[p].id];
            if (w->pod[p].id != m && (x->master != m || !x->link_up || x->synced_from != m))
                return 0;
            for (int q = 0; q < w->nsts * w->width; q++)
                if (x->pfail[w->pod[q].id] || x->fail[w->pod[q].id])
                    return 0;
        }
    }
    return 1;
}

/* kill-target: the target a run moved keys into, killed when its time came (if it is
 * still a master), as a fault of its own. */
static void kill_target(sc_t *w)
{
    int p = w->kt_pod;
    if (!w->kt_at || w->tick < w->kt_at)
        return;
    w->kt_at = 0;
    if (w->tick >= w->end_faults || !w->pod[p].present || !w->pod[p].running || w->pod[p].terminating ||
        w->n[w->pod[p].id]->master >= 0)
        return;
    ev(w, 37, p, w->pod[p].id, "kill-target: pod %d, a slot move's target", p);
    kill_pod(w, p, sim_rng_range(&w->rng, 5, 60), 0, 1);
    w->res.faults[SC_F_KILL_TARGET]++;
    if (!w->fault_open) {
        w->fault_open = 1;
        w->fault_at = w->tick;
    }
}

static void faults(sc_t *w)
{
    for (int p = 0; p < MAXPOD; p++) {
        pod_t *pd = &w->pod[p];
        if (pd->present && pd->restart_at && w->tick >= pd->restart_at)
            start_pod(w, p, pd->restart_new_id, pd->restart_data);
        if (pd->present && pd->terminating && pd->running &&
            (w->n[pd->id]->master >= 0 || w->tick >= pd->term_at)) {
            pd->terminating = 0;
            pd->restart_new_ip = (int)sim_rng_below(&w->rng, 2);
            kill_pod(w, p, sim_rng_range(&w->rng, 20, 50), 0, 1);
        }
        if (pd->isolated && w->tick >= pd->isolated_until) {
            pd->isolated = 0;
            w->topo_ver++;
            ev(w, 35, p, 0, "pod %d reachable again", p);
        }
    }
    kill_target(w);
    if (w->tick >= w->end_faults || w->tick < w->next_fault)
        return;
    unsigned set = w->cfg.faults ? w->cfg.faults : SC_FAULTS_DEFAULT;
    int f = (int)sim_rng_below(&w->rng, SC_F_DRAWN);
    if (!(set & SC_FAULT_BIT(f)))
        return;
    int hurts = f != SC_F_OPERATOR_CRASH && f != SC_F_OBS_LATE && f != SC_F_OBS_STALL;
    if (hurts && !w->cfg.overlap && !settled(w)) {
        w->next_fault = w->tick + 10;
        return;
    }
    if (inject(w, f)) {
        w->res.faults[f]++;
        if (hurts && !w->fault_open) {
            w->fault_open = 1;
            w->fault_at = w->tick;
        }
    }
    int64_t mean = w->cfg.fault_every ? w->cfg.fault_every : 300;
    w->next_fault = w->tick + sim_rng_range(&w->rng, mean / 2, mean * 3 / 2);
}

/* ---- invariants -------------------------------------------------------------------------- */

/* 1 when another running node knows node xi at an address: it is part of the cluster
 * (a node started without nodes.conf claims its keys' slots alone until it is met). */
static int joined(const sc_t *w, int xi)
{
    for (int i = 0; i < w->nids; i++)
        if (i != xi && w->n[i]->alive && w->n[i]->know[xi] && w->n[i]->vip[xi])
            return 1;
    return 0;
}

/* Never two running masters of the cluster claiming one slot with the same config epoch. */
static void check_epochs(sc_t *w)
{
    static int16_t who[CN_SLOTS];
    uint32_t sum = 0;
    for (int i = 0; i < w->nids; i++)
        if (w->n[i]->alive)
            sum += (w->n[i]->claims_ver * 2 + (uint32_t)joined(w, i)) * (uint32_t)(i + 1);
    if (sum == w->claims_seen)
        return;
    w->claims_seen = sum;
    memset(who, 0xff, sizeof(who));
    for (int i = 0; i < w->nids; i++) {
        const node_t *x = w->n[i];
        if (!x->alive || x->master >= 0 || !x->nmine || !joined(w, i))
            continue;
        for (int s = 0; s < CN_SLOTS; s++) {
            if (x->owner[s] != i)
                continue;
            if (who[s] >= 0 && w->n[who[s]]->epoch == x->epoch) {
                fail_now(w,
                         "two masters claim slot %d with config epoch %llu: node %d (pod %d) and node %d (pod %d)", s,
                         (unsigned long long)x->epoch, who[s], w->n[who[s]]->pod, i, x->pod);
                return;
            }
            if (who[s] < 0)
                who[s] = (int16_t)i;
        }
    }
}

/* Every pod of the layout up and reachable, nothing open, every node knowing every
 * other well, one slot table; else why not into why[cap]. Returns the first pod's node,
 * or -1. */
static int converged_nodes(sc_t *w, char *why, size_t cap)
{
    int np = w->nsts * w->width, first = -1;
    for (int p = 0; p < np; p++) {
        const pod_t *pd = &w->pod[p];
        if (!pd->running || pd->isolated)
            return snprintf(why, cap, "pod %d down or cut off", p), -1;
        const node_t *x = w->n[pd->id];
        if (x->nopen)
            return snprintf(why, cap, "pod %d has slot %d open", p, x->open[0].slot), -1;
        for (int q = 0; q < np; q++) {
            int y = w->pod[q].id;
            if (q != p && (!x->know[y] || x->vip[y] != pod_ip(w, q) || x->pfail[y] || x->fail[y]))
                return snprintf(why, cap, "pod %d does not see pod %d's node %d well", p, q, y), -1;
        }
        if (first < 0) {
            first = pd->id;
            continue;
        }
        const int16_t *a = w->n[first]->owner;
        if (!memcmp(x->owner, a, sizeof(x->owner)))
            continue;
        int s = 0;
        while (x->owner[s] == a[s])
            s++;
        return snprintf(why, cap,
                        "pod %d's slot table differs from pod 0's: slot %d is node %d's (epoch %lld) for pod 0, "
                        "node %d's (epoch %lld) for pod %d",
                        p, s, a[s], a[s] >= 0 ? (long long)epoch_in(w, first, a[s]) : -1LL, x->owner[s],
                        x->owner[s] >= 0 ? (long long)epoch_in(w, pd->id, x->owner[s]) : -1LL, p),
               -1;
    }
    return first;
}

/* Shard k: one master holding slots, the others its linked, synced replicas. */
static int converged_shard(sc_t *w, int k, char *why, size_t cap)
{
    int m = -1;
    for (int p = k * w->width; p < (k + 1) * w->width; p++)
        if (w->n[w->pod[p].id]->master < 0) {
            if (m >= 0 || !w->n[w->pod[p].id]->nmine)
                return snprintf(why, cap, "shard %d: pod %d a master besides pod %d, or one without slots", k, p, m),
                       0;
            m = p;
        }
    if (m < 0)
        return snprintf(why, cap, "shard %d has no master", k), 0;
    for (int p = k * w->width; p < (k + 1) * w->width; p++) {
        const node_t *x = w->n[w->pod[p].id];
        if (p != m && (x->master != w->pod[m].id || !x->link_up || x->synced_from != w->pod[m].id))
            return snprintf(why, cap, "shard %d: pod %d not a linked replica of pod %d", k, p, m), 0;
    }
    return 1;
}

/* Converged (sim_cluster.h); else why not into why[cap]. */
static int converged(sc_t *w, char *why, size_t cap)
{
    if (w->nsts != w->shards)
        return snprintf(why, cap, "%d shard StatefulSets for %d shards", w->nsts, w->shards), 0;
    int first = converged_nodes(w, why, cap);
    if (first < 0)
        return 0;
    const node_t *f = w->n[first];
    for (int s = 0; s < CN_SLOTS; s++) {
        int o = f->owner[s];
        if (o < 0 || !w->n[o]->alive || w->n[o]->master >= 0 || w->pod[w->n[o]->pod].id != o)
            return snprintf(why, cap, "slot %d owned by node %d, no master of the layout", s, o), 0;
    }
    for (int k = 0; k < w->shards; k++)
        if (!converged_shard(w, k, why, cap))
            return 0;
    return 1;
}

/* At convergence every acknowledged key is on the owner of its slot. */
static void check_keys(sc_t *w)
{
    const node_t *f = w->n[w->pod[0].id];
    for (int k = 0; k < NKEYS; k++) {
        int o = f->owner[w->kslot[k]];
        if (w->n[o]->val[k] < w->acked[k]) {
            fail_now(w, "acknowledged write lost: key %d (slot %d): its owner node %d (pod %d) has %lld, acknowledged "
                        "%lld",
                     k, w->kslot[k], o, w->n[o]->pod, (long long)w->n[o]->val[k], (long long)w->acked[k]);
            return;
        }
    }
}

static void check(sc_t *w)
{
    if (w->tick % 10)
        return;
    check_epochs(w);
    if (w->conv_ver != w->topo_ver) {
        char why[256];
        w->conv_ver = w->topo_ver;
        int was = w->converged;
        w->converged = converged(w, why, sizeof(why));
        if (w->converged && !was) {
            ev(w, 40, 0, 0, "converged");
            check_keys(w);
        } else if (!w->converged && was)
            ev(w, 41, 0, 0, "not converged: %s", why);
    }
    if (w->converged && w->fault_open) {
        int64_t t = w->tick - w->fault_at;
        w->fault_open = 0;
        w->res.recoveries++;
        if (t > w->res.recover_max_steps)
            w->res.recover_max_steps = t;
    }
    if (w->tick >= w->end_faults && w->converged && w->res.converged_after < 0)
        w->res.converged_after = w->tick - w->end_faults;
    if (w->tick >= w->end_faults + w->cfg.converge_within && w->res.converged_after < 0) {
        char why[256];
        converged(w, why, sizeof(why));
        fail_now(w, "no convergence within %lld steps after the faults stopped: %s",
                 (long long)w->cfg.converge_within, why);
    }
}

/* ---- the world --------------------------------------------------------------------------- */

static void world_free(sc_t *w)
{
    for (int i = 0; i < w->nids; i++) {
        free(w->n[i]->text);
        free(w->n[i]->runs);
        free(w->n[i]);
    }
    for (int p = 0; p < MAXPOD; p++) {
        free(w->obs[p].got.text);
        free(w->obs[p].pending.text);
        cn_view_destroy(&w->obs[p].view);
    }
    free(w->in);
    free(w->out);
    free(w);
}

static void add_shard(sc_t *w)
{
    int k = w->nsts++;
    w->in_ver++;
    for (int p = k * w->width; p < (k + 1) * w->width; p++) {
        w->pod[p].present = 1;
        w->pod[p].ip = IP0 + p;
        w->pod[p].id = -1;
        start_pod(w, p, 1, 0);
    }
}

static sc_t *world_new(const sc_cfg_t *cfg)
{
    sc_t *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    w->cfg = *cfg;
    w->last_cmd = -1;
    w->in = calloc(1, sizeof(*w->in));
    w->out = calloc(1, sizeof(*w->out));
    if (!w->in || !w->out) {
        world_free(w);
        return NULL;
    }
    w->rng.s = cfg->seed * UINT64_C(0x9e3779b97f4a7c15) + 1;
    w->R = cfg->replicas ? cfg->replicas : (int)sim_rng_range(&w->rng, 1, 2);
    w->width = 1 + w->R;
    w->shards = BASE_SHARDS;
    w->next_ip = IP0 + MAXPOD;
    w->end_faults = cfg->steps - cfg->tail;
    w->next_fault = 300;
    w->res.converged_after = -1;
    w->dump_at = sim_env_int("SIM_DUMP", 0);
    w->cfg.trace_why = sim_env_int("SIM_TRACE", 0) > 1 ? (int)sim_env_int("SIM_TRACE", 0) - 1 : 0;
    w->res.replicas = w->R;
    for (int p = 0; p < MAXPOD; p++)
        w->pod[p].id = -1;
    for (int k = 0; k < NKEYS; k++)
        w->kslot[k] = (int)sim_rng_below(&w->rng, CN_SLOTS);
    for (int k = 0; k < BASE_SHARDS; k++)
        add_shard(w);
    return w;
}

/* With a trace, each running node's slot table in brief: how many slots it gives whom. */
static void dump(sc_t *w)
{
    for (int i = 0; i < w->nids && w->cfg.trace; i++) {
        const node_t *x = w->n[i];
        if (!x->alive)
            continue;
        fprintf(w->cfg.trace, "%lld   node %d (pod %d, %s %d, epoch %llu):", (long long)w->tick, i, x->pod,
                x->master < 0 ? "master" : "replica of", x->master, (unsigned long long)x->epoch);
        for (int o = 0; o < w->nids; o++)
            if (x->cnt[o])
                fprintf(w->cfg.trace, " node %d %d (epoch %llu)", o, x->cnt[o], (unsigned long long)epoch_in(w, i, o));
        fprintf(w->cfg.trace, "\n");
    }
}

static void step(sc_t *w)
{
    int64_t t = w->tick;
    if (w->cfg.trace && t && t == w->dump_at)
        dump(w);
    if (!w->cfg.no_reshard && t == w->cfg.steps * 15 / 100) {
        w->shards = BASE_SHARDS + 1;
        add_shard(w);
        ev(w, 50, w->shards, 0, "spec: %d shards", w->shards);
    }
    if (!w->cfg.no_reshard && t == w->cfg.steps * 50 / 100) {
        w->shards = BASE_SHARDS;
        w->topo_ver++;
        w->in_ver++;
        ev(w, 50, w->shards, 0, "spec: %d shards", w->shards);
    }
    faults(w);
    for (int i = 0; i < w->nids; i++)
        if (w->n[i]->alive)
            bus_node(w, i);
    for (int y = 0; y < w->nids && w->pfail_seen; y++)
        fail_detect(w, y);
    w->pfail_seen = 0;
    for (int i = 0; i < w->nids; i++)
        if (w->n[i]->alive && w->n[i]->master >= 0) {
            failover_step(w, i);
            if (w->n[i]->master >= 0)
                replicate(w, i);
        }
    if (!w->wdeadline && sim_rng_chance(&w->rng, 1, 2))
        client_write(w);
    client_wait(w);
    for (int p = 0; p < w->nsts * w->width; p++) {
        if ((t + p) % OBS_EVERY == 0 || w->probe_all)
            observe(w, p);
        deliver(w, p);
    }
    w->probe_all = 0;
    if (t >= w->op_down_until && ((w->obs_news && t >= w->last_reconcile + 10) || t >= w->requeue_at)) {
        w->obs_news = 0;
        w->last_reconcile = t;
        reconcile(w);
    }
    check(w);
    w->tick++;
}

int sc_run(const sc_cfg_t *cfg, sc_result_t *out)
{
    memset(out, 0, sizeof(*out));
    if (cfg->steps <= cfg->tail)
        return -1;
    sc_t *w = world_new(cfg);
    if (!w)
        return -1;
    while (w->tick < cfg->steps && !w->res.failed)
        step(w);
    if (!w->res.failed) {
        char why[256];
        if (!converged(w, why, sizeof(why)))
            fail_now(w, "not converged at the end: %s", why);
        else
            check_keys(w);
    }
    w->res.steps = w->tick;
    *out = w->res;
    if (!out->failed)
        out->step = w->tick;
    world_free(w);
    return out->failed ? 1 : 0;
}
