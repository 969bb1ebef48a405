/* test_cluster_topo: Cluster mode's decisions (workerd/cluster_topo.h) as a table over
 * observed CLUSTER NODES views, and the CLUSTER NODES / CLUSTER INFO parser
 * (common/clusternodes.h).
 *
 * Each row describes the cluster as Redis would report it: the nodes (id, address, role,
 * master, slots, flags) and, per pod, which of them its view holds; the row's CLUSTER
 * NODES texts are built from that and parsed like observerd's. The row says the exact
 * commands expected (pod <- argv), and every row is also checked for the invariant:
 * no ADDSLOTSRANGE of a slot some view attributes to a node, no FORGET of a node that
 * holds slots or is someone's master, and never an empty master given slots once the
 * cluster was bootstrapped.
 */
#include "cluster_observe.h"
#include "cluster_topo.h"
#include "clusternodes.h"
#include "cu_table.h"
#include "json_at.h"
#include "text_case.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the parser ---------------------------------------------------------------------- */

#define ID_A "07c37dfeb235213a872192d90877d0cd55635b91"
#define ID_B "67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1"
#define ID_C "292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f"

static void test_parse_nodes(void)
{
    const char *text =
        ID_A " 127.0.0.1:30004@31004,host-a slave " ID_C " 0 1426238317239 4 connected\n" ID_B
        " 127.0.0.1:30002@31002 master - 0 1426238316232 2 connected 5461-10922 [5461->-" ID_C "]\r\n" ID_C
        " :0@0 myself,master,fail? - 0 0 1 disconnected 0-5460 10923 [77-<-" ID_B "]\n";
    cn_view_t *v = NULL;
    char err[256] = "";
    CU_ASSERT_EQUAL_FATAL(cn_parse(text, strlen(text), &v, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL_FATAL(v->n, 3);
    const cn_node_t *a = &v->nodes[0], *b = &v->nodes[1], *c = &v->nodes[2];
    CU_ASSERT_STRING_EQUAL(a->id, ID_A);
    CU_ASSERT_STRING_EQUAL(a->ip, "127.0.0.1");
    CU_ASSERT_EQUAL(a->port, 30004);
    CU_ASSERT_EQUAL(a->cport, 31004);
    CU_ASSERT_EQUAL(a->flags, CN_REPLICA);
    CU_ASSERT_STRING_EQUAL(a->master, ID_C);
    CU_ASSERT_EQUAL(a->config_epoch, 4);
    CU_ASSERT_TRUE(a->connected);
    CU_ASSERT_EQUAL(b->nranges, 1);
    CU_ASSERT_EQUAL(b->ranges[0].from, 5461);
    CU_ASSERT_EQUAL(b->ranges[0].to, 10922);
    CU_ASSERT_EQUAL(b->nopen, 1);
    CU_ASSERT_EQUAL(b->open[0].slot, 5461);
    CU_ASSERT_FALSE(b->open[0].importing);
    CU_ASSERT_STRING_EQUAL(b->open[0].peer, ID_C);
    CU_ASSERT_STRING_EQUAL(c->ip, "");
    CU_ASSERT_EQUAL(c->flags, CN_MYSELF | CN_MASTER | CN_PFAIL);
    CU_ASSERT_FALSE(c->connected);
    CU_ASSERT_EQUAL(cn_slot_count(c), 5462);
    CU_ASSERT_TRUE(c->open[0].importing);
    CU_ASSERT_PTR_EQUAL(cn_myself(v), c);
    CU_ASSERT_PTR_EQUAL(cn_find(v, ID_B), b);
    char ranges[64];
    cn_ranges_text(c->ranges, c->nranges, ranges, sizeof(ranges));
    CU_ASSERT_STRING_EQUAL(ranges, "0-5460,10923");
    /* the normalized text: sorted by id, no ping/pong times, read back the same */
    char norm[2048], again[2048];
    CU_ASSERT_EQUAL(cn_format(v, norm, sizeof(norm)), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(norm, ID_A " 127.0.0.1:30004@31004 slave " ID_C " 0 0 4 connected\n"));
    CU_ASSERT(strstr(norm, ID_A) < strstr(norm, ID_C) && strstr(norm, ID_C) < strstr(norm, ID_B));
    CU_ASSERT_PTR_NOT_NULL(strstr(norm, " myself,master,fail? - 0 0 1 disconnected 0-5460 10923 [77-<-" ID_B "]\n"));
    cn_view_t *back = NULL;
    CU_ASSERT_EQUAL_FATAL(cn_parse(norm, strlen(norm), &back, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(cn_format(back, again, sizeof(again)), 0);
    CU_ASSERT_STRING_EQUAL(norm, again);
    CU_ASSERT_EQUAL(cn_format(back, again, 100), -1);
    cn_view_destroy(&back);
    cn_view_destroy(&v);
    CU_ASSERT_PTR_NULL(v);
}

static void test_parse_refuses(void)
{
    static const text_case_t rows[] = {
        {"abc 1.2.3.4:1@2 master - 0 0 1 connected", "line 1: node id \"abc\""},
        {ID_A " 1.2.3.4 master - 0 0 1 connected", "address"},
        {ID_A " 1.2.3.4:1@2 master xyz 0 0 1 connected", "master \"xyz\""},
        {ID_A " 1.2.3.4:1@2 master - 0 0 1 up", "link-state"},
        {ID_A " 1.2.3.4:1@2 master - 0 0 1 connected 16384", "slot \"16384\""},
        {ID_A " 1.2.3.4:1@2 master - 0 0 1 connected 9-3", "slot \"9-3\""},
        {ID_A " 1.2.3.4:1@2 master - 0 0 1 connected [5->-zz]", "slot \"[5->-zz]\""},
        {ID_A " 1.2.3.4:1@2 master - x 0 1 connected", "unsigned numbers"},
        {"\n" ID_A " 1.2.3.4:1@2 master", "line 2: 3 fields"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        cn_view_t *v = (cn_view_t *)1;
        char err[256] = "";
        CU_ASSERT_EQUAL(cn_parse(rows[i].in, strlen(rows[i].in), &v, err, sizeof(err)), -1);
        CU_ASSERT_PTR_NULL(v);
        if (!strstr(err, rows[i].want))
            fprintf(stderr, "\n  \"%s\": %s", rows[i].in, err);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, rows[i].want));
    }
}

static void test_parse_info(void)
{
    const char *text = "cluster_state:ok\r\ncluster_slots_assigned:16384\r\ncluster_slots_ok:16380\r\n"
                       "cluster_slots_pfail:4\r\ncluster_slots_fail:0\r\ncluster_known_nodes:6\r\ncluster_size:3\r\n"
                       "cluster_current_epoch:6\r\ncluster_my_epoch:2\r\nnonsense\r\n";
    cn_info_t in;
    cn_info_parse(text, strlen(text), &in);
    CU_ASSERT_EQUAL(in.state_ok, 1);
    CU_ASSERT_EQUAL(in.slots_assigned, 16384);
    CU_ASSERT_EQUAL(in.slots_ok, 16380);
    CU_ASSERT_EQUAL(in.slots_pfail, 4);
    CU_ASSERT_EQUAL(in.known_nodes, 6);
    CU_ASSERT_EQUAL(in.size, 3);
    CU_ASSERT_EQUAL(in.current_epoch, 6);
    cn_info_parse("cluster_state:fail\n", 19, &in);
    CU_ASSERT_EQUAL(in.state_ok, 0);
    CU_ASSERT_EQUAL(in.slots_assigned, -1);
}

/* ---- the planner's table ----------------------------------------------------------------- */

/* A node as the rows describe it: its id is "n" + the tag repeated to 40 hex digits. */
typedef struct {
    char tag;            /* '0'..'9', 'a'..'f': the node; 0 ends the list */
    const char *ip;      /* "" = noaddr */
    const char *flags;   /* "master", "slave", "master,fail", "handshake" ... */
    char master;         /* the master's tag for a replica, 0 = "-" */
    const char *slots;   /* "0-5460 5461" ... */
    int epoch;           /* its config epoch (0 = 1) */
} tnode_t;

/* A pod: which node it is (0 = not observed), which nodes its view holds, and its state. */
typedef struct {
    char is;             /* its node's tag; 0: not observed */
    const char *knows;   /* the tags in its view besides itself; NULL = all (but the row's unmet) */
    const char *ip;      /* the pod's IP; NULL = 10.0.0.<its index + 1> */
    int link_down, outdated, terminating, not_ready, absent;
    long offset;
    const char *label;   /* its role label: NULL = what its node reports (right), "-" = none */
} tpod_t;

typedef struct {
    const char *what;
    int shards, replicas, bootstrapped;
    tnode_t nodes[16];
    tpod_t pods[12];
    const char *want;    /* "pod<-CLUSTER ARGS; ..." in order, "" none */
    const char *reason;  /* ClusterHealthy's reason */
    int delete_pod;      /* -1 none */
    const char *labels;  /* "0=primary 1=replica" the labels set, "" none */
    const char *move;    /* RESHARD's move "source->target ranges" (+ " resume"); NULL = none */
    int nshards, width;  /* the layout (0: the spec's) */
    int sts;             /* each shard StatefulSet's spec.replicas (0: none) */
    const char *layout;  /* "replicas 2,2,2 keep 1,1,1" kept; NULL = not checked */
    const char *unmet;   /* nodes no other node has met yet: in no view but their own, which
                          * holds only them; NULL = none */
    int held;            /* moves_held: a backup of the cluster runs */
} row_t;

static void id_of(char tag, char *out)
{
    memset(out, tag, CN_ID_LEN);
    out[CN_ID_LEN] = '\0';
}

/* The CLUSTER NODES text pod p of row r would answer. */
static void view_text(const row_t *r, const tpod_t *p, char *out, size_t len)
{
    size_t off = 0;
    out[0] = '\0';
    for (const tnode_t *n = r->nodes; n->tag; n++) {
        int mine = n->tag == p->is;
        if (!mine && p->knows && !strchr(p->knows, n->tag))
            continue;
        if (!mine && r->unmet && (strchr(r->unmet, n->tag) || strchr(r->unmet, p->is)))
            continue;
        char id[CN_ID_LEN + 1], master[CN_ID_LEN + 1] = "-";
        id_of(n->tag, id);
        if (n->master)
            id_of(n->master, master);
        off += (size_t)snprintf(out + off, len - off, "%s %s:%d@%d %s%s %s 0 0 %d connected %s\n", id,
                                *n->ip ? n->ip : "", *n->ip ? 6379 : 0, *n->ip ? 16379 : 0, mine ? "myself," : "",
                                n->flags, master, n->epoch ? n->epoch : 1, n->slots ? n->slots : "");
    }
}

/* The row's input (views parsed into views[]). */
static void build(const row_t *r, ctopo_input_t *in, cn_view_t **views)
{
    memset(in, 0, sizeof(*in));
    in->shards = r->shards;
    in->replicas = r->replicas;
    in->bootstrapped = r->bootstrapped;
    in->moves_held = r->held;
    in->nshards = r->nshards;
    in->width = r->width;
    int per = r->width ? r->width : 1 + r->replicas, n = (r->nshards ? r->nshards : r->shards) * per;
    for (int k = 0; k < CTOPO_MAX_SHARDS; k++)
        in->sts_replicas[k] = r->sts;
    for (int i = 0; i < n; i++) {
        const tpod_t *p = &r->pods[i];
        ctopo_pod_t *q = &in->pod[i];
        snprintf(q->pod, sizeof(q->pod), "c-shard%d-%d", i / per, i % per);
        q->present = !p->absent;
        q->ready = !p->not_ready && !p->absent;
        q->terminating = p->terminating;
        q->outdated = p->outdated;
        q->link_up = !p->link_down;
        q->offset = p->offset;
        if (p->ip)
            snprintf(q->ip, sizeof(q->ip), "%s", p->ip);
        else
            snprintf(q->ip, sizeof(q->ip), "10.0.0.%d", i + 1);
        views[i] = NULL;
        q->label = p->label && strcmp(p->label, "-") ? p->label : NULL;
        if (!p->is)
            continue;
        char text[8192], err[256];
        view_text(r, p, text, sizeof(text));
        CU_ASSERT_EQUAL_FATAL(cn_parse(text, strlen(text), &views[i], err, sizeof(err)), 0);
        q->view = views[i];
        q->observed = 1;
        q->info.state_ok = 1;
        const cn_node_t *me = cn_myself(views[i]);
        if (!p->label) /* right already */
            q->label = me->flags & CN_MASTER ? (cn_slot_count(me) ? "primary" : NULL) : "replica";
    }
}

/* The commands as "pod<-ARGS; ...". */
static void cmds_text(const ctopo_input_t *in, const ctopo_result_t *o, char *out, size_t len)
{
    size_t off = 0;
    out[0] = '\0';
    for (size_t i = 0; i < o->ncmds; i++) {
        off += (size_t)snprintf(out + off, len - off, "%s%d<-", i ? "; " : "", o->cmd[i].pod);
        for (int a = o->cmd[i].kind == CTOPO_FLUSH ? 0 : 1; a < o->cmd[i].argc; a++) {
            char arg[48];
            snprintf(arg, sizeof(arg), "%s", o->cmd[i].argv[a]);
            if (strlen(arg) == CN_ID_LEN) /* an id: its tag */
                arg[1] = '\0';
            off += (size_t)snprintf(out + off, len - off, "%s%s", a > 1 ? " " : "", arg);
        }
        for (int k = 0; k < o->cmd[i].npeers; k++) /* FORCE's other candidates, checked by the executor */
            off += (size_t)snprintf(out + off, len - off, "%s%d%s", k ? "," : " [beside ", o->cmd[i].peer[k],
                                    k + 1 == o->cmd[i].npeers ? "]" : "");
    }
    (void)in;
}

/* Step 2b's FAILOVER FORCE: to a replica of the gone master it names (the executor checks
 * that master in the replica's own CLUSTER NODES), its other candidates replicas of the
 * same master in the same shard, none with a higher observed offset. */
static void check_force(const ctopo_input_t *in, const ctopo_cmd_t *cmd, int per)
{
    if (cmd->kind != CTOPO_FAILOVER || cmd->argc != 3 || strcmp(cmd->argv[2], "FORCE"))
        return;
    const cn_node_t *me = cn_myself(in->pod[cmd->pod].view);
    CU_ASSERT_FATAL(me != NULL);
    CU_ASSERT(me->flags & CN_REPLICA);
    CU_ASSERT_STRING_EQUAL(cmd->gone, me->master);
    for (int k = 0; k < cmd->npeers; k++) {
        int p = cmd->peer[k];
        const cn_node_t *pe = cn_myself(in->pod[p].view);
        CU_ASSERT(p != cmd->pod && p / per == cmd->pod / per);
        CU_ASSERT(pe && (pe->flags & CN_REPLICA) && !strcmp(pe->master, cmd->gone));
        CU_ASSERT(in->pod[p].offset <= in->pod[cmd->pod].offset);
    }
}

/* Some other node, in some pod's view, holds slot at a config epoch above me's. */
static int held_elsewhere(const ctopo_input_t *in, int n, const cn_node_t *me, int slot)
{
    for (int i = 0; i < n; i++)
        for (size_t k = 0; in->pod[i].view && k < in->pod[i].view->n; k++) {
            const cn_node_t *e = &in->pod[i].view->nodes[k];
            if (!strcmp(e->id, me->id) || e->config_epoch <= me->config_epoch)
                continue;
            for (size_t x = 0; x < e->nranges; x++)
                if (e->ranges[x].from <= slot && slot <= e->ranges[x].to)
                    return 1;
        }
    return 0;
}

/* The node id the cluster gives slot to: the highest config epoch over every view. */
static const char *agreed_owner(const ctopo_input_t *in, int n, int slot)
{
    const char *id = NULL;
    uint64_t best = 0;
    for (int i = 0; i < n; i++)
        for (size_t k = 0; in->pod[i].view && k < in->pod[i].view->n; k++) {
            const cn_node_t *e = &in->pod[i].view->nodes[k];
            for (size_t x = 0; x < e->nranges; x++)
                if (e->ranges[x].from <= slot && slot <= e->ranges[x].to && (!id || e->config_epoch > best)) {
                    id = e->id;
                    best = e->config_epoch;
                }
        }
    return id;
}

/* A move takes only slots its source holds as the cluster agrees, to a master of a wanted
 * shard; RESET only on a leaving node no view gives a slot. */
static void check_move_and_reset(const row_t *r, const ctopo_input_t *in, const ctopo_result_t *o, int n)
{
    int per = r->width ? r->width : 1 + r->replicas;
    for (size_t m = 0; m < o->nmoves; m++) {
        const ctopo_move_t *mv = &o->moves[m];
        const cn_node_t *src = cn_myself(in->pod[mv->source].view), *dst = cn_myself(in->pod[mv->target].view);
        CU_ASSERT_FATAL(src && dst);
        CU_ASSERT(dst->flags & CN_MASTER);
        CU_ASSERT(mv->target / per < r->shards || mv->target / per == mv->source / per); /* (or 5b's) */
        for (size_t x = 0; x < mv->nranges; x++)
            for (int slot = mv->ranges[x].from; slot <= mv->ranges[x].to; slot++) {
                const char *owner = agreed_owner(in, n, slot);
                CU_ASSERT(owner && (!strcmp(owner, src->id) || (mv->resume && !strcmp(owner, dst->id))));
            }
    }
    for (size_t c = 0; c < o->ncmds; c++) {
        if (o->cmd[c].kind != CTOPO_RESET)
            continue;
        int i = o->cmd[c].pod;
        const cn_node_t *me = cn_myself(in->pod[i].view);
        CU_ASSERT(i / per >= r->shards || i % per > r->replicas);
        CU_ASSERT_FATAL(me != NULL);
        CU_ASSERT(me->nranges == 0 && me->nopen == 0);
        for (int slot = 0; slot < CN_SLOTS; slot++) {
            const char *owner = agreed_owner(in, n, slot);
            if (owner && !strcmp(owner, me->id)) {
                CU_FAIL("RESET of a node the cluster gives a slot");
                break;
            }
        }
    }
}

/* The moves as "source->target ranges[ resume]; ...", "" none. */
static void move_text(const ctopo_result_t *o, char *out, size_t len)
{
    size_t off = 0;
    out[0] = '\0';
    for (size_t m = 0; m < o->nmoves; m++) {
        const ctopo_move_t *mv = &o->moves[m];
        char ranges[512];
        cn_ranges_text(mv->ranges, mv->nranges, ranges, sizeof(ranges));
        off += (size_t)snprintf(out + off, len - off, "%s%d->%d %s%s", m ? "; " : "", mv->source, mv->target, ranges,
                                mv->resume ? " resume" : "");
    }
}

/* The layout kept as "replicas a,b,c keep x,y,z". */
static void layout_text(const ctopo_result_t *o, char *out, size_t len)
{
    size_t off = (size_t)snprintf(out, len, "replicas");
    for (int k = 0; k < o->nshards; k++)
        off += (size_t)snprintf(out + off, len - off, "%s%d", k ? "," : " ", o->replicas_of[k]);
    off += (size_t)snprintf(out + off, len - off, " keep");
    for (int k = 0; k < o->nshards; k++)
        off += (size_t)snprintf(out + off, len - off, "%s%d", k ? "," : " ", o->keep_shard[k]);
}

/* 1 when the result resets pod i. */
static int reset_in(const ctopo_result_t *o, int i)
{
    for (size_t c = 0; c < o->ncmds; c++)
        if (o->cmd[c].kind == CTOPO_RESET && o->cmd[c].pod == i)
            return 1;
    return 0;
}

/* The invariant: nothing the result says could lose a slot's data. */
static void check_safe(const row_t *r, const ctopo_input_t *in, const ctopo_result_t *o)
{
    int n = (r->nshards ? r->nshards : r->shards) * (r->width ? r->width : 1 + r->replicas);
    check_move_and_reset(r, in, o, n);
    for (size_t c = 0; c < o->ncmds; c++) {
        const ctopo_cmd_t *cmd = &o->cmd[c];
        check_force(in, cmd, r->width ? r->width : 1 + r->replicas);
        if (cmd->kind == CTOPO_ADDSLOTS) {
            CU_ASSERT_FALSE(r->bootstrapped);
            for (int a = 2; a + 1 < cmd->argc; a += 2) {
                int from = (int)strtol(cmd->argv[a], NULL, 10), to = (int)strtol(cmd->argv[a + 1], NULL, 10);
                for (int i = 0; i < n; i++)
                    for (size_t k = 0; in->pod[i].view && k < in->pod[i].view->n; k++) {
                        const cn_node_t *e = &in->pod[i].view->nodes[k];
                        for (size_t x = 0; x < e->nranges; x++)
                            CU_ASSERT(e->ranges[x].to < from || e->ranges[x].from > to);
                    }
            }
        }
        if (cmd->kind == CTOPO_FLUSH) { /* only a master whose every slot is held elsewhere at a higher epoch */
            const cn_node_t *me = cn_myself(in->pod[cmd->pod].view);
            CU_ASSERT_FATAL(me != NULL);
            CU_ASSERT(me->flags & CN_MASTER);
            for (size_t x = 0; x < me->nranges; x++)
                for (int slot = me->ranges[x].from; slot <= me->ranges[x].to; slot++)
                    CU_ASSERT(held_elsewhere(in, n, me, slot));
            size_t next = c + 1;
            if (cn_slot_count(me) > 0) {
                CU_ASSERT(next < o->ncmds && o->cmd[next].kind == CTOPO_DELSLOTS && o->cmd[next].pod == cmd->pod);
                next++;
            }
            CU_ASSERT(next < o->ncmds && o->cmd[next].kind == CTOPO_REPLICATE && o->cmd[next].pod == cmd->pod);
        }
        if (cmd->kind == CTOPO_FORGET) /* a node no pod is, or one reset in the same plan (RETIRE) */
            for (int i = 0; i < n; i++) {
                const cn_node_t *e = in->pod[i].view ? cn_find(in->pod[i].view, cmd->argv[2]) : NULL;
                CU_ASSERT(!e || e->nranges == 0);
                CU_ASSERT(!e || !(e->flags & CN_MYSELF) || reset_in(o, i));
                const cn_node_t *me = in->pod[i].view ? cn_myself(in->pod[i].view) : NULL;
                CU_ASSERT(!me || strcmp(me->master, cmd->argv[2]) || reset_in(o, i));
            }
    }
}

#define ALL NULL
#define M(tag, ip, slots) {tag, ip, "master", 0, slots, 0}
#define S(tag, ip, of) {tag, ip, "slave", of, NULL, 0}
/* S=3, r=1, healthy: shard k's master is node 2k at 10.0.0.<2k+1>, its replica node 2k+1. */
#define SHARD0 M('0', "10.0.0.1", "0-5460"), S('1', "10.0.0.2", '0')
#define SHARD1 M('2', "10.0.0.3", "5461-10922"), S('3', "10.0.0.4", '2')
#define SHARD2 M('4', "10.0.0.5", "10923-16383"), S('5', "10.0.0.6", '4')
#define HEALTHY SHARD0, SHARD1, SHARD2
/* The same nodes before any slot: six empty masters. */
#define EMPTY6                                                                                                     \
    M('0', "10.0.0.1", NULL), M('1', "10.0.0.2", NULL), M('2', "10.0.0.3", NULL), M('3', "10.0.0.4", NULL),      \
        M('4', "10.0.0.5", NULL), M('5', "10.0.0.6", NULL)
/* Shards 0, 1 and 2 of four, a quarter of the slots each (shard 3 holds the rest). */
#define QUARTERS012                                                                                                \
    M('0', "10.0.0.1", "0-4095"), S('1', "10.0.0.2", '0'), M('2', "10.0.0.3", "4096-8191"),                      \
        S('3', "10.0.0.4", '2'), M('4', "10.0.0.5", "8192-12287"), S('5', "10.0.0.6", '4')
/* Three shards after 4 -> 3 moved the leaving shard's slots back. */
#define REGAINED012                                                                                                \
    M('0', "10.0.0.1", "0-5461"), S('1', "10.0.0.2", '0'), M('2', "10.0.0.3", "5462-10922"),                     \
        S('3', "10.0.0.4", '2'), SHARD2
/* A pod that is node tag (0: not observed) at 10.0.0.<its index + 1>, its view holding
 * every node of its row (but the row's unmet ones); PX: with other fields set. */
#define P(tag) {.is = tag}
#define PX(tag, ...) {.is = tag, __VA_ARGS__}
#define PODS0123 P('0'), P('1'), P('2'), P('3')
#define PODS6 PODS0123, P('4'), P('5')
#define PODS8 PODS6, P('6'), P('7')
#define PODS9 PODS8, P('8')
/* Pod 4 back without its nodes.conf as the new node e: its view lacks its old id, 4; no
 * role label yet. */
#define NEW_E PX('e', .knows = "01235", .label = "-")
/* No RESHARD move, the spec's layout. */
#define NO_RESHARD .move = NULL
/* shard 0 with two masters holding slots (simulation finding 9) */
#define TWO_MASTERS                                                                                                \
    {'0', "10.0.0.1", "master", 0, "10923-12000", 5}, {'1', "10.0.0.2", "master", 0, "0-5460", 8},               \
        M('2', "10.0.0.3", "5461-10922"), S('3', "10.0.0.4", '2'), M('4', "10.0.0.5", "12001-16383"),            \
        S('5', "10.0.0.6", '4')
#define ID0 "0000000000000000000000000000000000000000"
#define ID6 "6666666666666666666666666666666666666666"

static const row_t rows[] = {
    {"healthy: nothing to do", 3, 1, 1, {HEALTHY}, {PODS6}, "", "ClusterOK", -1, "", NO_RESHARD},
    {"fresh nodes: the anchor meets every other", 3, 1, 0, {EMPTY6}, {PODS6},
     "0<-MEET 10.0.0.2 6379; 0<-MEET 10.0.0.3 6379; 0<-MEET 10.0.0.4 6379; 0<-MEET 10.0.0.5 6379; "
     "0<-MEET 10.0.0.6 6379",
     "Meeting", -1, "", NO_RESHARD, .unmet = "012345"},
    {"half-met, one MEET in handshake: only the other is met", 3, 1, 0,
     {EMPTY6, {'e', "10.0.0.5", "handshake", 0, NULL, 0}},
     {PX('0', .knows = "123e"), PX('1', .knows = "023"), PX('2', .knows = "013"), PX('3', .knows = "012"),
      PX('4', .knows = ""), PX('5', .knows = "")},
     "0<-MEET 10.0.0.6 6379", "Meeting", -1, "", NO_RESHARD},
    {"all met, no slot anywhere: every shard's range in one pass", 3, 1, 0, {EMPTY6}, {PODS6},
     "0<-ADDSLOTSRANGE 0 5460; 2<-ADDSLOTSRANGE 5461 10922; 4<-ADDSLOTSRANGE 10923 16383", "Bootstrapping", -1, "",
     NO_RESHARD},
    {"a crash mid-bootstrap: only the slots never assigned", 3, 1, 0,
     {M('0', "10.0.0.1", "0-5460"), M('1', "10.0.0.2", NULL), M('2', "10.0.0.3", "5461-8000"),
      M('3', "10.0.0.4", NULL), M('4', "10.0.0.5", NULL), M('5', "10.0.0.6", NULL)},
     {PX('0', .label = "-"), P('1'), PX('2', .label = "-"), P('3'), P('4'), P('5')},
     "2<-ADDSLOTSRANGE 8001 10922; 4<-ADDSLOTSRANGE 10923 16383", "Bootstrapping", -1, "0=primary 2=primary",
     NO_RESHARD},
    {"slots all held: the replicas follow their shard's master", 3, 1, 0,
     {M('0', "10.0.0.1", "0-5460"), M('1', "10.0.0.2", NULL), M('2', "10.0.0.3", "5461-10922"),
      M('3', "10.0.0.4", NULL), M('4', "10.0.0.5", "10923-16383"), M('5', "10.0.0.6", NULL)},
     {PX('0', .label = "-"), P('1'), PX('2', .label = "-"), P('3'), PX('4', .label = "-"), P('5')},
     "1<-FLUSHALL; 1<-REPLICATE 0; 3<-FLUSHALL; 3<-REPLICATE 2; 5<-FLUSHALL; 5<-REPLICATE 4", "ReplicasMissing", -1,
     "0=primary 2=primary 4=primary", NO_RESHARD},
    {"a replica of the wrong shard is moved to its own", 3, 1, 1,
     {SHARD0, M('2', "10.0.0.3", "5461-10922"), S('3', "10.0.0.4", '0'), SHARD2}, {PODS6}, "3<-REPLICATE 2",
     "ReplicasMissing", -1, "", NO_RESHARD},
    {"a pod back with a new IP is met again at it", 3, 1, 1, {HEALTHY},
     {P('0'), P('1'), PX('2', .ip = "10.0.0.33"), P('3'), P('4'), P('5')}, "0<-MEET 10.0.0.33 6379", "Meeting", -1,
     "", NO_RESHARD},
    {"a pod back without its nodes.conf: its old id forgotten everywhere, no slot for it", 3, 1, 1,
     {SHARD0, SHARD1, {'4', "10.0.0.5", "master,fail", 0, NULL, 0}, M('5', "10.0.0.6", "10923-16383"),
      M('e', "10.0.0.5", NULL)},
     {PODS0123, PX('e', .label = "-"), PX('5', .label = "replica")}, "0<-MEET 10.0.0.5 6379", "Meeting", -1,
     "5=primary", NO_RESHARD, .unmet = "e"},
    {"...then, met: the old id forgotten on every node that lists it", 3, 1, 1,
     {SHARD0, SHARD1, {'4', "", "master,fail,noaddr", 0, NULL, 0}, M('5', "10.0.0.6", "10923-16383"),
      M('e', "10.0.0.5", NULL)},
     {PODS0123, NEW_E, P('5')}, "0<-FORGET 4; 1<-FORGET 4; 2<-FORGET 4; 3<-FORGET 4; 5<-FORGET 4", "ReplicasMissing",
     -1, "", NO_RESHARD},
    {"...then: the empty master rejoins as its shard's replica, never taking slots", 3, 1, 1,
     {SHARD0, SHARD1, M('e', "10.0.0.5", NULL), M('5', "10.0.0.6", "10923-16383")},
     {PODS0123, PX('e', .label = "-"), P('5')}, "4<-FLUSHALL; 4<-REPLICATE 5", "ReplicasMissing", -1, "", NO_RESHARD},
    {"a pod back without nodes.conf but with its AOF claims its keys' slots by itself: no master of shard 2 yet", 3,
     1, 1,
     {SHARD0, SHARD1, {'4', "", "master,fail,noaddr", 0, "10923-16383", 4}, S('5', "10.0.0.6", '4'),
      {'e', "10.0.0.5", "master", 0, "10923-10930", 0}},
     {PODS0123, NEW_E, P('5')}, "", "SlotsUncovered", -1, "", NO_RESHARD},
    {"the pod came back at its master's address before Redis agreed on the failure: the old id is noaddr "
     "and never failed, so Redis would never promote; its replica takes over (FAILOVER FORCE)",
     3, 1, 1,
     {SHARD0, SHARD1, {'4', "", "master,noaddr", 0, "10923-16383", 4}, S('5', "10.0.0.6", '4'),
      {'e', "10.0.0.5", "master", 0, "10923-10930", 0}},
     {PODS0123, NEW_E, PX('5', .link_down = 1)}, "5<-FAILOVER FORCE", "SlotsUncovered", -1, "", NO_RESHARD},
    {"...the same before the new node is met: the failover does not wait for the MEET", 3, 1, 1,
     {SHARD0, SHARD1, {'4', "", "master,noaddr", 0, "10923-16383", 4}, S('5', "10.0.0.6", '4'),
      {'e', "10.0.0.5", "master", 0, NULL, 0}},
     {PODS0123, PX('e', .label = "-"), PX('5', .link_down = 1)}, "0<-MEET 10.0.0.5 6379; 5<-FAILOVER FORCE",
     "Meeting", -1, "", NO_RESHARD, .unmet = "e"},
    {"two replicas of the gone master: FORCE to the highest observed offset, the other named for the executor's "
     "check (finding 8: observed offsets may be older than the master's last writes)",
     3, 2, 1,
     {M('0', "10.0.0.1", "0-5460"), S('1', "10.0.0.2", '0'), S('2', "10.0.0.3", '0'), M('3', "10.0.0.4", "5461-10922"),
      S('4', "10.0.0.5", '3'), S('5', "10.0.0.6", '3'), {'6', "", "master,noaddr", 0, "10923-16383", 4},
      S('7', "10.0.0.8", '6'), S('8', "10.0.0.9", '6'), {'e', "10.0.0.7", "master", 0, NULL, 0}},
     {PODS6, PX('e', .knows = "012345", .label = "-"), PX('7', .link_down = 1, .offset = 120),
      PX('8', .link_down = 1, .offset = 130)},
     "8<-FAILOVER FORCE [beside 7]", "SlotsUncovered", -1, "", NO_RESHARD},
    {"the pod is back at its master's address as a new node before any node noticed (the old id still a plain "
     "master): the replica is never made to follow the new node (CI's data loss); FAILOVER FORCE",
     3, 1, 1,
     {SHARD0, SHARD1, {'4', "10.0.0.5", "master", 0, "10923-16383", 4}, S('5', "10.0.0.6", '4'),
      M('e', "10.0.0.5", NULL)},
     {PODS0123, NEW_E, PX('5', .link_down = 1)}, "5<-FAILOVER FORCE", "SlotsUncovered", -1, "", NO_RESHARD},
    {"...the old id failed by Redis: Redis promotes; the new empty master is still nobody's seed", 3, 1, 1,
     {SHARD0, SHARD1, {'4', "10.0.0.5", "master,fail", 0, "10923-16383", 4}, S('5', "10.0.0.6", '4'),
      M('e', "10.0.0.5", NULL)},
     {PODS0123, NEW_E, PX('5', .link_down = 1)}, "", "SlotsUncovered", -1, "", NO_RESHARD},
    {"...Redis promotes shard 2's replica: the slotless old identity is forgotten first", 3, 1, 1,
     {SHARD0, SHARD1, {'4', "", "master,fail,noaddr", 0, NULL, 4}, {'5', "10.0.0.6", "master", 0, "10923-16383", 5},
      {'e', "10.0.0.5", "master", 0, "10923-10930", 0}},
     {PODS0123, NEW_E, PX('5', .label = "replica")}, "0<-FORGET 4; 1<-FORGET 4; 2<-FORGET 4; 3<-FORGET 4; 5<-FORGET 4",
     "ReplicasMissing", -1, "5=primary", NO_RESHARD},
    {"...then the pod unclaims its stale slots, flushes and follows the promoted replica", 3, 1, 1,
     {SHARD0, SHARD1, {'5', "10.0.0.6", "master", 0, "10923-16383", 5},
      {'e', "10.0.0.5", "master", 0, "10923-10930", 0}},
     {PODS0123, PX('e', .label = "-"), PX('5', .label = "replica")},
     "4<-FLUSHALL; 4<-DELSLOTSRANGE 10923 10930; 4<-REPLICATE 5", "ReplicasMissing", -1, "5=primary", NO_RESHARD},
    {"a failed primary promoted by Redis: labels follow (the old one's taken: one primary a shard), nothing sent", 3,
     1, 1, {{'0', "10.0.0.1", "master,fail", 0, NULL, 0}, M('1', "10.0.0.2", "0-5460"), SHARD1, SHARD2},
     {PX(0, .label = "primary"), PX('1', .label = "replica"), P('2'), P('3'), P('4'), P('5')}, "", "NotObserved", -1,
     "0=replica 1=primary", NO_RESHARD},
    {"the old primary back: it follows the new one by itself", 3, 1, 1,
     {S('0', "10.0.0.1", '1'), M('1', "10.0.0.2", "0-5460"), SHARD1, SHARD2},
     {PX('0', .label = "primary"), PX('1', .label = "replica"), P('2'), P('3'), P('4'), P('5')}, "", "ClusterOK", -1,
     "0=replica 1=primary", NO_RESHARD},
    {"a shard's only node lost its data (r = 0): slots uncovered, named, never reassigned", 3, 0, 1,
     {M('0', "10.0.0.1", "0-5460"), M('1', "10.0.0.2", "5461-10922"),
      {'2', "10.0.0.3", "master,fail", 0, "10923-16383", 0}, M('e', "10.0.0.3", NULL)},
     {P('0'), P('1'), PX('e', .knows = "01", .label = "-")}, "", "SlotsUncovered", -1, "", NO_RESHARD},
    {"rollout: an outdated replica is deleted once all is settled", 3, 1, 1, {HEALTHY},
     {P('0'), P('1'), P('2'), PX('3', .outdated = 1), P('4'), P('5')}, "", "ClusterOK", 3, "", NO_RESHARD},
    {"rollout: an outdated master hands over to its up-to-date replica first", 3, 1, 1, {HEALTHY},
     {PX('0', .outdated = 1), P('1'), P('2'), P('3'), P('4'), P('5')}, "1<-FAILOVER", "ClusterOK", -1, "", NO_RESHARD},
    {"rollout waits while a replica's link is down", 3, 1, 1, {HEALTHY},
     {PX('0', .outdated = 1), PX('1', .link_down = 1), P('2'), P('3'), P('4'), P('5')}, "", "ReplicasMissing", -1, "",
     NO_RESHARD},
    {"a terminating master (kubectl delete pod) hands over at once", 3, 1, 1, {HEALTHY},
     {P('0'), P('1'), PX('2', .terminating = 1), P('3'), P('4'), P('5')}, "3<-FAILOVER", "ClusterOK", -1, "",
     NO_RESHARD},

    /* ---- RESHARD and RETIRE: 3 -> 4 shards, 4 -> 3, 2 -> 1 replicas per shard ---- */
    {"scale out: the new shard's replica follows its seed (an empty master)", 4, 1, 1,
     {HEALTHY, M('6', "10.0.0.7", NULL), M('7', "10.0.0.8", NULL)}, {PODS8}, "7<-FLUSHALL; 7<-REPLICATE 6",
     "ReplicasMissing", -1, "", NO_RESHARD},
    {"scale out: the highest slots of the first shard with too many go to the new shard", 4, 1, 1,
     {HEALTHY, M('6', "10.0.0.7", NULL), S('7', "10.0.0.8", '6')}, {PODS8}, "", "Resharding", -1, "",
     .move = "0->6 4096-5460; 2->6 9557-10922; 4->6 15019-16383"},
    {"scale out, later: shard 0 gave its share; shard 1 next", 4, 1, 1,
     {M('0', "10.0.0.1", "0-4095"), S('1', "10.0.0.2", '0'), SHARD1, SHARD2,
      {'6', "10.0.0.7", "master", 0, "4096-5460", 7}, S('7', "10.0.0.8", '6')},
     {PODS8}, "", "Resharding", -1, "", .move = "2->6 9557-10922; 4->6 15019-16383"},
    {"two masters holding slots in shard 0 (a move's target lost before its replica heard of the slots moved "
     "into it, back with nodes.conf: simulation finding 9): the other's slots move to the one holding most",
     3, 1, 1, {TWO_MASTERS}, {PODS6}, "", "TwoMasters", -1, "", .move = "0->1 10923-12000"},
    {"two masters holding as many slots: the higher config epoch keeps them", 3, 1, 1,
     {{'0', "10.0.0.1", "master", 0, "0-2730", 9}, {'1', "10.0.0.2", "master", 0, "2731-5461", 4},
      M('2', "10.0.0.3", "5462-10922"), S('3', "10.0.0.4", '2'), SHARD2},
     {PODS6}, "", "TwoMasters", -1, "", .move = "1->0 2731-5461"},
    {"two masters in shard 0 while a pod is not observed: no move yet", 3, 1, 1, {TWO_MASTERS},
     {P('0'), P('1'), P('2'), P('3'), P('4'), P(0)}, "", "NotObserved", -1, "", NO_RESHARD},
    {"two masters in a leaving shard: the move inside it first (RESHARD waits for one head)", 3, 1, 1,
     {QUARTERS012, {'6', "10.0.0.7", "master", 0, "12288-16000", 7}, {'7', "10.0.0.8", "master", 0, "16001-16383", 9}},
     {PODS8}, "", "TwoMasters", -1, "", .move = "7->6 16001-16383", .nshards = 4, .width = 2},
    {"the second master emptied by its move (Redis did not make it follow): made a replica of the shard's master", 3,
     1, 1,
     {M('0', "10.0.0.1", NULL), {'1', "10.0.0.2", "master", 0, "0-5460 10923-12000", 8},
      M('2', "10.0.0.3", "5461-10922"), S('3', "10.0.0.4", '2'), M('4', "10.0.0.5", "12001-16383"),
      S('5', "10.0.0.6", '4')},
     {PODS6}, "0<-FLUSHALL; 0<-REPLICATE 1", "ReplicasMissing", -1, "", NO_RESHARD},
    {"a move cut off (slot 5000 MIGRATING on the source, IMPORTING on the target): finished first, then the rest", 4,
     1, 1,
     {M('0', "10.0.0.1", "0-5460 [5000->-" ID6 "]"), S('1', "10.0.0.2", '0'), SHARD1, SHARD2,
      M('6', "10.0.0.7", "[5000-<-" ID0 "]"), S('7', "10.0.0.8", '6')},
     {PODS8}, "", "Resharding", -1, "", .move = "0->6 5000 resume; 0->6 4096-5460; 2->6 9557-10922; 4->6 15019-16383"},
    {"a group of slots cut off (5000-5002 and 5007 open on both ends, 5003 owned by the target, the "
     "source still MIGRATING): all of them in the one move that finishes first",
     4, 1, 1,
     {M('0', "10.0.0.1",
        "0-5002 5004-5460 [5000->-" ID6 "] [5001->-" ID6 "] [5002->-" ID6 "] [5003->-" ID6 "] [5007->-" ID6 "]"),
      S('1', "10.0.0.2", '0'), SHARD1, SHARD2,
      M('6', "10.0.0.7", "5003 [5000-<-" ID0 "] [5001-<-" ID0 "] [5002-<-" ID0 "] [5007-<-" ID0 "]"),
      S('7', "10.0.0.8", '6')},
     {PODS8}, "", "Resharding", -1, "",
     .move = "0->6 5000-5003,5007 resume; 0->6 5004-5460,4096-5002; 2->6 9557-10922; 4->6 15019-16383"},
    {"the importing end failed over since: the cut-off move goes on to its shard's new master", 4, 1, 1,
     {M('0', "10.0.0.1", "0-4499 5000-5460 [5000->-" ID6 "]"), S('1', "10.0.0.2", '0'), SHARD1, SHARD2,
      S('6', "10.0.0.7", '7'), {'7', "10.0.0.8", "master", 0, "4500-4999", 8}},
     {PODS8}, "", "Resharding", -1, "",
     .move = "0->7 5000 resume; 0->7 5000-5460,4096-4499; 2->7 9557-10922; 4->7 15019-16383"},
    {"a move cut off while its target is away: nothing moves, it waits", 4, 1, 1,
     {M('0', "10.0.0.1", "0-5460 [5000->-" ID6 "]"), S('1', "10.0.0.2", '0'), SHARD1, SHARD2,
      {'6', "10.0.0.7", "master,fail", 0, NULL, 0}, S('7', "10.0.0.8", '6')},
     {PODS6, PX(0, .not_ready = 1), P('7')}, "", "NotObserved", -1, "", NO_RESHARD},
    {"scale in 4 -> 3: the leaving shard gives its slots back first", 3, 1, 1,
     {QUARTERS012, M('6', "10.0.0.7", "12288-16383"), S('7', "10.0.0.8", '6')}, {PODS8}, "", "Resharding", -1, "",
     .move = "6->0 15018-16383; 6->2 13653-15017; 6->4 12288-13652", .nshards = 4, .sts = 2,
     .layout = "replicas 2,2,2,2 keep 1,1,1,1"},
    {"a move cut off while a backup runs (moves held): the open slot is finished, no other move starts", 4, 1, 1,
     {M('0', "10.0.0.1", "0-5460 [5000->-" ID6 "]"), S('1', "10.0.0.2", '0'), SHARD1, SHARD2,
      M('6', "10.0.0.7", "[5000-<-" ID0 "]"), S('7', "10.0.0.8", '6')},
     {PODS8}, "", "Resharding", -1, "", .move = "0->6 5000 resume", .held = 1},
    {"scale in 4 -> 3 while a backup runs (moves held): nothing moves yet, the shard stays", 3, 1, 1,
     {QUARTERS012, M('6', "10.0.0.7", "12288-16383"), S('7', "10.0.0.8", '6')}, {PODS8}, "", "Resharding", -1, "",
     .nshards = 4, .sts = 2, .layout = "replicas 2,2,2,2 keep 1,1,1,1", .held = 1},
    {"scale in: the drained shard's nodes are forgotten everywhere and reset", 3, 1, 1,
     {REGAINED012, M('6', "10.0.0.7", NULL), S('7', "10.0.0.8", '6')}, {PODS8},
     "0<-FORGET 6; 1<-FORGET 6; 2<-FORGET 6; 3<-FORGET 6; 4<-FORGET 6; 5<-FORGET 6; 6<-RESET HARD; "
     "0<-FORGET 7; 1<-FORGET 7; 2<-FORGET 7; 3<-FORGET 7; 4<-FORGET 7; 5<-FORGET 7; 6<-FORGET 7; 7<-RESET HARD",
     "Shrinking", -1, "", .nshards = 4, .sts = 2, .layout = "replicas 2,2,2,2 keep 1,1,1,1"},
    {"scale in: both retired (alone, new ids): the shard is dropped", 3, 1, 1,
     {REGAINED012, M('a', "10.0.0.7", NULL), M('b', "10.0.0.8", NULL)}, {PODS6, P('a'), P('b')}, "", "Shrinking", -1,
     "", .nshards = 4, .sts = 2, .layout = "replicas 2,2,2,2 keep 1,1,1,0", .unmet = "ab"},
    {"replicas 2 -> 1: a leaving pod that is its shard's master hands over first", 3, 1, 1,
     {S('0', "10.0.0.1", '2'), S('1', "10.0.0.2", '2'), M('2', "10.0.0.3", "0-5460"), M('3', "10.0.0.4", "5461-10922"),
      S('4', "10.0.0.5", '3'), S('5', "10.0.0.6", '3'), M('6', "10.0.0.7", "10923-16383"), S('7', "10.0.0.8", '6'),
      S('8', "10.0.0.9", '6')},
     {PODS9}, "0<-FAILOVER", "Shrinking", -1, "", .width = 3, .sts = 3, .layout = "replicas 3,3,3 keep 1,1,1"},
    {"replicas 2 -> 1: a leaving replica is forgotten and reset; the retired ones let their shard shrink", 3, 1, 1,
     {M('0', "10.0.0.1", "0-5460"), S('1', "10.0.0.2", '0'), S('2', "10.0.0.3", '0'), M('3', "10.0.0.4", "5461-10922"),
      S('4', "10.0.0.5", '3'), M('c', "10.0.0.6", NULL), M('6', "10.0.0.7", "10923-16383"), S('7', "10.0.0.8", '6'),
      M('d', "10.0.0.9", NULL)},
     {P('0'), P('1'), P('2'), P('3'), P('4'), P('c'), P('6'), P('7'), P('d')},
     "0<-FORGET 2; 1<-FORGET 2; 3<-FORGET 2; 4<-FORGET 2; 6<-FORGET 2; 7<-FORGET 2; 2<-RESET HARD", "Shrinking", -1,
     "", .width = 3, .sts = 3, .layout = "replicas 3,2,2 keep 1,1,1", .unmet = "cd"},
};

static void test_table(void)
{
    for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
        const row_t *row = &rows[r];
        static ctopo_input_t in;
        static ctopo_result_t out;
        cn_view_t *views[CTOPO_MAX_PODS] = {0};
        build(row, &in, views);
        CU_ASSERT_EQUAL_FATAL(ctopo_compute(&in, &out), 0);
        char got[4096], labels[256] = "", move[600], layout[200];
        cmds_text(&in, &out, got, sizeof(got));
        move_text(&out, move, sizeof(move));
        layout_text(&out, layout, sizeof(layout));
        int n = (row->nshards ? row->nshards : row->shards) * (row->width ? row->width : 1 + row->replicas);
        for (int i = 0; i < n; i++)
            if (out.label[i])
                snprintf(labels + strlen(labels), sizeof(labels) - strlen(labels), "%s%d=%s", labels[0] ? " " : "", i,
                         out.label[i]);
        int ok = !strcmp(got, row->want) && !strcmp(out.reason, row->reason) && out.delete_pod == row->delete_pod &&
                 !strcmp(labels, row->labels) && !strcmp(move, row->move ? row->move : "") &&
                 (!row->layout || !strcmp(layout, row->layout));
        if (!ok)
            fprintf(stderr, "\n  %s:\n    commands %s\n    want     %s\n    reason %s (%s), delete %d, labels %s\n"
                            "    move %s (want %s), layout %s (want %s)\n",
                    row->what, got, row->want, out.reason, out.message, out.delete_pod, labels, move,
                    row->move ? row->move : "", layout, row->layout ? row->layout : "-");
        CU_ASSERT_TRUE(ok);
        check_safe(row, &in, &out);
        for (int i = 0; i < n; i++)
            cn_view_destroy(&views[i]);
    }
}

/* Pod p's view replaced by text (parsed); its old view freed. */
static void set_view(ctopo_input_t *in, cn_view_t **views, int p, const char *text)
{
    char err[256];
    cn_view_destroy(&views[p]);
    CU_ASSERT_EQUAL_FATAL(cn_parse(text, strlen(text), &views[p], err, sizeof(err)), 0);
    in->pod[p].view = views[p];
}

/* Two nodes that restarted at new addresses hold each other noaddr (a deadlock of Redis's
 * gossip seen in the fault soak): pod 5 lists pod 2's node (shard 1's master since a
 * failover) as a noaddr replica and so misses shard 1's slots, and pod 2 lists pod 5 as
 * noaddr. Each is sent a MEET at the other's address; nothing waits for it. */
static void test_remeet_noaddr(void)
{
    static const row_t row = {"noaddr both ways", 3, 1, 1, {HEALTHY}, {PODS6}, "", "", -1, "", NO_RESHARD};
    static ctopo_input_t in;
    static ctopo_result_t out;
    cn_view_t *views[CTOPO_MAX_PODS] = {0};
    build(&row, &in, views);
    char id[6][CN_ID_LEN + 1], five[4096], two[4096], got[1024];
    for (int t = 0; t < 6; t++)
        id_of((char)('0' + t), id[t]);
    snprintf(five, sizeof(five),
             "%s 10.0.0.1:6379@16379 master - 0 0 1 connected 0-5460\n"
             "%s 10.0.0.2:6379@16379 slave %s 0 0 1 connected\n"
             "%s :0@0 slave,noaddr %s 0 0 1 connected\n"
             "%s 10.0.0.4:6379@16379 slave %s 0 0 1 connected\n"
             "%s 10.0.0.5:6379@16379 master - 0 0 1 connected 10923-16383\n"
             "%s 10.0.0.6:6379@16379 myself,slave %s 0 0 1 connected\n",
             id[0], id[1], id[0], id[2], id[3], id[3], id[2], id[4], id[5], id[4]);
    snprintf(two, sizeof(two),
             "%s 10.0.0.1:6379@16379 master - 0 0 1 connected 0-5460\n"
             "%s 10.0.0.2:6379@16379 slave %s 0 0 1 connected\n"
             "%s 10.0.0.3:6379@16379 myself,master - 0 0 1 connected 5461-10922\n"
             "%s 10.0.0.4:6379@16379 slave %s 0 0 1 connected\n"
             "%s 10.0.0.5:6379@16379 master - 0 0 1 connected 10923-16383\n"
             "%s :0@0 slave,noaddr %s 0 0 1 connected\n",
             id[0], id[1], id[0], id[2], id[3], id[2], id[4], id[5], id[4]);
    set_view(&in, views, 5, five);
    set_view(&in, views, 2, two);
    in.pod[5].info.state_ok = 0;
    CU_ASSERT_EQUAL_FATAL(ctopo_compute(&in, &out), 0);
    cmds_text(&in, &out, got, sizeof(got));
    CU_ASSERT_STRING_EQUAL(got, "2<-MEET 10.0.0.6 6379; 5<-MEET 10.0.0.3 6379");
    CU_ASSERT(strcmp(out.reason, "Meeting") != 0); /* not pending: nothing waits for it */
    /* a handshake under way at that address: pod 5 sends no second MEET */
    snprintf(five + strlen(five), sizeof(five) - strlen(five),
             "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee 10.0.0.3:6379@16379 handshake - 0 0 0 connected\n");
    set_view(&in, views, 5, five);
    CU_ASSERT_EQUAL_FATAL(ctopo_compute(&in, &out), 0);
    cmds_text(&in, &out, got, sizeof(got));
    CU_ASSERT_STRING_EQUAL(got, "2<-MEET 10.0.0.6 6379");
    for (int i = 0; i < 6; i++)
        cn_view_destroy(&views[i]);
}

/* The bootstrap ranges cover 0..16383 once, evenly, for every shard count; a ranges text
 * that does not fit says so (",..."), whole ranges only. */
static void test_ranges(void)
{
    const cn_range_t r[] = {{0, 100}, {200, 200}, {300, 399}};
    static const struct {
        size_t len;
        const char *want;
    } cut[] = {{64, "0-100,200,300-399"}, {18, "0-100,200,300-399"}, {17, "0-100,200,..."},
               {14, "0-100,200,..."}, {13, "0-100,..."}, {9, "..."}, {4, "..."}, {3, ""}};
    for (size_t i = 0; i < sizeof(cut) / sizeof(cut[0]); i++) {
        char text[64];
        cn_ranges_text(r, 3, text, cut[i].len);
        if (strcmp(text, cut[i].want))
            fprintf(stderr, "\n  %zu bytes: \"%s\", want \"%s\"\n", cut[i].len, text, cut[i].want);
        CU_ASSERT_STRING_EQUAL(text, cut[i].want);
    }
    for (int s = 3; s <= CTOPO_MAX_SHARDS; s++) {
        int next = 0;
        for (int k = 0; k < s; k++) {
            int from, to;
            ctopo_shard_range(s, k, &from, &to);
            CU_ASSERT_EQUAL(from, next);
            int size = to - from + 1;
            CU_ASSERT(size == CN_SLOTS / s || size == CN_SLOTS / s + 1);
            next = to + 1;
        }
        CU_ASSERT_EQUAL(next, CN_SLOTS);
    }
}

/* The input from a work item: pods, observation, StatefulSets. */
static void test_observe(void)
{
    char obs[2048];
    snprintf(obs, sizeof(obs),
             "{\"nodes\":[{\"pod\":\"c-shard0-0\",\"ip\":\"10.0.0.1\",\"reachable\":true,\"offset\":42,"
             "\"cluster\":{\"nodes\":\"%s\",\"state\":\"fail\",\"slotsAssigned\":5461}},"
             "{\"pod\":\"c-shard0-1\",\"ip\":\"10.0.0.9\",\"reachable\":true,"
             "\"cluster\":{\"nodes\":\"%s\"}},"
             "{\"pod\":\"c-shard1-0\",\"ip\":\"10.0.0.3\",\"reachable\":true,\"cluster\":{\"nodes\":\"bad\"}}]}",
             "07c37dfeb235213a872192d90877d0cd55635b91 10.0.0.1:6379@16379 myself,master - 0 0 1 connected 0-5460\\n",
             "07c37dfeb235213a872192d90877d0cd55635b91 10.0.0.1:6379@16379 myself,master - 0 0 1 connected\\n");
    json_object *o = parse(obs);
    json_object *pods = parse(
        "[{\"metadata\":{\"name\":\"c-shard0-0\",\"labels\":{\"cache.example.com/role\":\"primary\","
        "\"controller-revision-hash\":\"c-shard0-old\"}},\"status\":{\"podIP\":\"10.0.0.1\","
        "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}},"
        "{\"metadata\":{\"name\":\"c-shard0-1\",\"deletionTimestamp\":\"x\"},\"status\":{\"podIP\":\"10.0.0.2\"}},"
        "{\"metadata\":{\"name\":\"c-shard1-0\"},\"status\":{\"podIP\":\"10.0.0.3\"}}]");
    json_object *sts = parse("{\"metadata\":{\"name\":\"c-shard0\"},\"status\":{\"updateRevision\":\"c-shard0-new\"}}");
    const json_object *sets[] = {sts};
    static ctopo_input_t in;
    cn_view_t *views[CTOPO_MAX_PODS];
    CU_ASSERT_EQUAL_FATAL(cluster_observe("c", 3, 1, 1, pods, o, sets, 1, &in, views), 0);
    CU_ASSERT_STRING_EQUAL(in.pod[0].pod, "c-shard0-0");
    CU_ASSERT_STRING_EQUAL(in.pod[5].pod, "c-shard2-1");
    CU_ASSERT_TRUE(in.pod[0].present && in.pod[0].ready && in.pod[0].observed && in.pod[0].outdated);
    CU_ASSERT_EQUAL(in.pod[0].offset, 42);
    CU_ASSERT_EQUAL(in.pod[0].info.state_ok, 0);
    CU_ASSERT_EQUAL(in.pod[0].info.slots_assigned, 5461);
    CU_ASSERT_STRING_EQUAL(in.pod[0].label, "primary");
    CU_ASSERT_EQUAL(cn_slot_count(cn_myself(in.pod[0].view)), 5461);
    /* observed at another IP than the pod's: not observed; terminating */
    CU_ASSERT_TRUE(in.pod[1].present && in.pod[1].terminating && !in.pod[1].ready && !in.pod[1].observed);
    /* a text that does not parse: not observed */
    CU_ASSERT_TRUE(in.pod[2].present && !in.pod[2].observed && !in.pod[2].outdated);
    CU_ASSERT_FALSE(in.pod[4].present);
    for (int i = 0; i < 6; i++)
        cn_view_destroy(&views[i]);
    CU_ASSERT_EQUAL(cluster_observe("c", 2, 1, 0, pods, o, sets, 1, &in, views), -1);
    json_object_put(o);
    json_object_put(pods);
    json_object_put(sts);
}

static const cu_entry_t tests[] = {
    CU_SUITE("CLUSTER NODES"),
    {"parse a view", test_parse_nodes},
    {"refuse what is not one, naming the line", test_parse_refuses},
    {"CLUSTER INFO", test_parse_info},
    CU_SUITE("cluster topology"),
    {"the table over observed views", test_table},
    {"a node holding a peer noaddr meets it again", test_remeet_noaddr},
    {"bootstrap ranges", test_ranges},
    {"the input from a work item", test_observe},
};

CU_MAIN(tests)
