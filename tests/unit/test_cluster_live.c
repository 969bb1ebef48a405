/* test_cluster_live: Cluster mode's decisions (workerd/cluster_topo.h) driving six real
 * redis-server processes in cluster mode (Debian's redis-server, on loopback addresses
 * 127.77.N.1..6, port 6379 as in a pod), with no Kubernetes: observe each node (CLUSTER
 * NODES, CLUSTER INFO, INFO replication, parsed as observerd does), decide, send the
 * commands, and again, until the cluster is healthy. Then checked against Redis's own
 * tool side by side: `redis-cli --cluster check` must find all 16384 slots covered and no
 * open slot.
 *
 *   - bootstrap from six fresh nodes: 3 shards x 1 replica;
 *   - a crash mid-bootstrap (only the first ADDSLOTSRANGE made): one owner per slot after;
 *   - a master SIGKILLed: Redis Cluster fails over; back with its nodes.conf, it follows;
 *   - a master back without its nodes.conf (a new node id): its old id forgotten, the new
 *     node a replica of its shard, never given slots; every key written before still there.
 */
#include "cluster_topo.h"
#include "redisexec.h"
#include "clusternodes.h"
#include "cu_table.h"
#include "redis_servers.h"
#include "slotmove.h"
#include "tmpdir.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NODES 6     /* the cluster of most tests: 3 shards x (1 + 1) */
#define SHARDS 3
#define NODES_MAX 8 /* test_reshard: a fourth shard */

static char dir[256];
static char ip[NODES_MAX][32];
static server_t srv[NODES_MAX];
static int nnodes = NODES;   /* the layout's pods: nnodes / 2 shards */
static int spec_shards = SHARDS;

/* Start node i (its nodes.conf in dir/n<i>; wipe: removed first). Returns 0 or -1. */
static int node_start(int i, int wipe)
{
    char d[300], conf[320];
    snprintf(d, sizeof(d), "%s/n%d", dir, i);
    mkdir(d, 0700);
    snprintf(conf, sizeof(conf), "%s/nodes.conf", d);
    if (wipe) { /* a fresh node: nothing of before (a node back without nodes.conf: the caller) */
        unlink(conf);
        char aof[400];
        snprintf(aof, sizeof(aof), "rm -rf '%s/appendonlydir'", d);
        if (system(aof))
            return -1;
    }
    /* an AOF, as aof persistence has: a node back without nodes.conf still has its keys */
    const char *extra[] = {"--cluster-enabled", "yes", "--cluster-config-file", conf, "--cluster-node-timeout",
                           "1000", "--cluster-announce-ip", ip[i], "--cluster-allow-replica-migration", "no",
                           "--dir", d, "--appendonly", "yes", NULL};
    return server_start_at(&srv[i], ip[i], 6379, extra);
}

static redisContext *conn(int i)
{
    struct timeval tv = {0, 500000};
    redisContext *c = redisConnectWithTimeout(ip[i], 6379, tv);
    if (c && c->err) {
        redisFree(c);
        return NULL;
    }
    if (c)
        redisSetTimeout(c, tv);
    return c;
}

/* A command's answer as text ("" on error); the caller frees. */
static char *ask(int i, const char *cmd)
{
    redisContext *c = conn(i);
    redisReply *r = c ? redisCommand(c, cmd) : NULL;
    char *s = strdup(r && r->type == REDIS_REPLY_STRING ? r->str : "");
    if (r)
        freeReplyObject(r);
    if (c)
        redisFree(c);
    return s;
}

/* DBSIZE of node i, -1 when it does not answer. */
static long long dbsize(int i)
{
    redisContext *c = conn(i);
    redisReply *r = c ? redisCommand(c, "DBSIZE") : NULL;
    long long n = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    if (r)
        freeReplyObject(r);
    if (c)
        redisFree(c);
    return n;
}

/* How many nodes node i knows (the lines of its CLUSTER NODES). */
static int nodes_known(int i)
{
    char *nodes = ask(i, "CLUSTER NODES");
    int lines = 0;
    for (const char *p = nodes; *p; p++)
        lines += *p == '\n';
    free(nodes);
    return lines;
}

/* What observerd would report of node i into p (its view into *view). */
static void observe(int i, ctopo_pod_t *p, cn_view_t **view)
{
    memset(p, 0, sizeof(*p));
    snprintf(p->pod, sizeof(p->pod), "c-shard%d-%d", i / 2, i % 2);
    snprintf(p->ip, sizeof(p->ip), "%s", ip[i]);
    p->present = p->ready = srv[i].pid > 0;
    p->offset = -1;
    *view = NULL;
    if (srv[i].pid <= 0)
        return;
    char *nodes = ask(i, "CLUSTER NODES"), *info = ask(i, "CLUSTER INFO"), *repl = ask(i, "INFO replication");
    char err[256];
    if (*nodes && cn_parse(nodes, strlen(nodes), view, err, sizeof(err)) == 0) {
        p->observed = 1;
        p->view = *view;
        cn_info_parse(info, strlen(info), &p->info);
        p->link_up = strstr(repl, "master_link_status:up") != NULL;
        const char *o = strstr(repl, "slave_repl_offset:");
        if (!o)
            o = strstr(repl, "master_repl_offset:");
        p->offset = o ? strtoll(strchr(o, ':') + 1, NULL, 10) : -1;
    }
    free(nodes);
    free(info);
    free(repl);
}

/* Send a decided command to its node. */
static void send_cmd(const ctopo_cmd_t *cmd)
{
    redisContext *c = conn(cmd->pod);
    const char *argv[CTOPO_MAX_ARGS];
    for (int a = 0; a < cmd->argc; a++)
        argv[a] = cmd->argv[a];
    redisReply *r = c ? redisCommandArgv(c, cmd->argc, argv, NULL) : NULL;
    if (r && r->type == REDIS_REPLY_ERROR)
        fprintf(stderr, "\n  %s %s on node %d: %s", cmd->argv[0], cmd->argv[1], cmd->pod, r->str);
    if (r)
        freeReplyObject(r);
    if (c)
        redisFree(c);
}

/* Carry out a decided move as the executor does (plan_cluster.c's plan_move). */
static void run_move(const ctopo_input_t *in, const ctopo_move_t *mv, int *slots)
{
    static slotmove_job_t job;
    memset(&job, 0, sizeof(job));
    const int ends[2] = {mv->source, mv->target};
    slotmove_node_t *to[2] = {&job.source, &job.target};
    for (int e = 0; e < 2; e++) {
        const cn_node_t *me = cn_myself(in->pod[ends[e]].view);
        snprintf(to[e]->pod, sizeof(to[e]->pod), "%s", in->pod[ends[e]].pod);
        snprintf(to[e]->ip, sizeof(to[e]->ip), "%s", in->pod[ends[e]].ip);
        to[e]->port = 6379;
        snprintf(to[e]->id, sizeof(to[e]->id), "%s", me->id);
    }
    for (size_t i = 0; i < mv->nothers; i++) {
        slotmove_node_t *o = &job.others[job.nothers++];
        snprintf(o->ip, sizeof(o->ip), "%s", in->pod[mv->others[i]].ip);
        o->port = 6379;
        snprintf(o->id, sizeof(o->id), "%s", cn_myself(in->pod[mv->others[i]].view)->id);
    }
    job.nranges = mv->nranges;
    memcpy(job.ranges, mv->ranges, mv->nranges * sizeof(mv->ranges[0]));
    job.wait_replicas = in->replicas > 0;
    job.batch_bytes = 4096;
    job.budget_ns = INT64_C(2000000000);
    slotmove_progress_t pr;
    char err[256];
    if (slotmove_run_sync(&job, NULL, NULL, &pr, err, sizeof(err)) < 0)
        fprintf(stderr, "\n  slot move: %s", err);
    *slots += pr.slots_done;
}

typedef struct {
    int bootstrapped;
    int moved;              /* slots moved (RESHARD) */
    int cmds[CTOPO_NKINDS]; /* commands sent, by kind */
    int max_cmds;     /* stop after this many commands in all (a crash), 0 = no limit */
    int quiet;        /* not healthy is expected: say nothing */
    int until_dropped; /* done once the leaving shard may be deleted (RETIRE) */
} run_t;

/* Observe, decide, act until healthy or seconds pass. Returns 1 when healthy. */
static int converge(run_t *run, int seconds, ctopo_result_t *out)
{
    static ctopo_input_t in;
    int64_t until = clock_mono_ns() + (int64_t)seconds * NS_PER_SEC;
    int sent = 0;
    while (clock_mono_ns() < until) {
        cn_view_t *views[NODES_MAX];
        memset(&in, 0, sizeof(in));
        in.shards = spec_shards;
        in.replicas = 1;
        in.nshards = nnodes / 2;
        in.bootstrapped = run->bootstrapped;
        for (int i = 0; i < nnodes; i++)
            observe(i, &in.pod[i], &views[i]);
        CU_ASSERT_EQUAL_FATAL(ctopo_compute(&in, out), 0);
        run->bootstrapped = out->bootstrapped;
        for (size_t k = 0; k < out->ncmds && (!run->max_cmds || sent < run->max_cmds); k++, sent++) {
            send_cmd(&out->cmd[k]);
            run->cmds[out->cmd[k].kind]++;
        }
        for (size_t m = 0; m < out->nmoves && !out->ncmds; m++)
            run_move(&in, &out->moves[m], &run->moved);
        for (int i = 0; i < nnodes; i++)
            cn_view_destroy(&views[i]);
        if (out->healthy || (run->until_dropped && out->nshards > spec_shards && !out->keep_shard[spec_shards]))
            return 1;
        if (run->max_cmds && sent >= run->max_cmds)
            return 0;
        nap_ms(200);
    }
    if (!run->quiet)
        fprintf(stderr, "\n  not healthy after %d s: %s: %s", seconds, out->reason, out->message);
    return 0;
}

/* redis-cli --cluster check from node i: all slots covered and no open slot. */
static int redis_cli_check(int i)
{
    char cmd[128], line[512];
    snprintf(cmd, sizeof(cmd), "redis-cli --cluster check %s:6379 2>&1", ip[i]);
    FILE *f = popen(cmd, "r");
    int covered = 0, open = 0, errors = 0;
    while (f && fgets(line, sizeof(line), f)) {
        covered |= strstr(line, "[OK] All 16384 slots covered") != NULL;
        open |= strstr(line, "slots are open") != NULL || strstr(line, "migrating state") != NULL ||
                strstr(line, "importing state") != NULL;
        errors |= strstr(line, "[ERR]") != NULL || strstr(line, "[WARNING]") != NULL;
    }
    if (f)
        pclose(f);
    return covered && !open && !errors;
}

static int setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/rdc-cluster-live-%d", (int)getpid());
    if (mkdir(dir, 0700))
        return -1;
    int net = (int)(getpid() % 250) + 1;
    for (int i = 0; i < NODES_MAX; i++)
        snprintf(ip[i], sizeof(ip[i]), "127.77.%d.%d", net, i + 1);
    return 0;
}

static int teardown(void)
{
    for (int i = 0; i < NODES_MAX; i++)
        server_stop(&srv[i]);
    tmpdir_remove(dir);
    return 0;
}

static void start_fresh(void)
{
    for (int i = 0; i < NODES; i++) {
        server_stop(&srv[i]);
        CU_ASSERT_EQUAL_FATAL(node_start(i, 1), 0);
    }
}

/* Six fresh nodes to a healthy 3 x 1 cluster; a crash after the first ADDSLOTSRANGE first. */
static void test_bootstrap(void)
{
    static ctopo_result_t out;
    start_fresh();
    run_t run = {0};
    /* until the first slot command (the MEETs and it), then "the operator dies" */
    for (int tries = 0; tries < 100 && !run.cmds[CTOPO_ADDSLOTS]; tries++) {
        run.max_cmds = 1;
        converge(&run, 5, &out);
    }
    CU_ASSERT_EQUAL(run.cmds[CTOPO_ADDSLOTS], 1);
    run.max_cmds = 0;
    CU_ASSERT_TRUE_FATAL(converge(&run, 30, &out));
    CU_ASSERT_EQUAL(run.cmds[CTOPO_ADDSLOTS], 3); /* one per shard in all: no second set */
    CU_ASSERT_EQUAL(run.cmds[CTOPO_FORGET], 0);
    CU_ASSERT_TRUE(out.bootstrapped);
    CU_ASSERT_EQUAL(out.slots_assigned, CN_SLOTS);
    CU_ASSERT_TRUE(redis_cli_check(3));
    for (int k = 0; k < SHARDS; k++)
        CU_ASSERT_EQUAL(out.shard[k].nreplicas, 1);
    /* a FORGET of a node this one does not know (forgotten already): Redis's answer is one
     * the executor counts as done (redisexec_done_already), a wrong verb's is not */
    const char *forget[] = {"CLUSTER", "FORGET", "0123456789abcdef0123456789abcdef01234567"};
    const char *bad[] = {"CLUSTER", "FORGETX", "0123456789abcdef0123456789abcdef01234567"};
    char err[256] = "";
    const int64_t two_s = INT64_C(2000000000);
    CU_ASSERT_NOT_EQUAL(redisexec_command(ip[0], 6379, NULL, NULL, 3, forget, two_s, NULL, 0, err, sizeof(err)), 0);
    CU_ASSERT_TRUE(redisexec_done_already(3, forget, err));
    err[0] = '\0';
    CU_ASSERT_NOT_EQUAL(redisexec_command(ip[0], 6379, NULL, NULL, 3, bad, two_s, NULL, 0, err, sizeof(err)), 0);
    CU_ASSERT_FALSE(redisexec_done_already(3, bad, err));
}

/* Keys written through the cluster (one per slot range), then read back. */
static int write_keys(int n, const char *prefix)
{
    char cmd[256];
    snprintf(cmd, sizeof(cmd),
             "for i in $(seq 1 %d); do echo \"SET %s$i $i\"; done | redis-cli -c -h %s -p 6379 >/dev/null", n,
             prefix, ip[0]);
    return system(cmd);
}

static int keys_back(int n, const char *prefix)
{
    int ok = 0;
    for (int i = 1; i <= n; i++) {
        char cmd[256], want[16], line[64] = "";
        snprintf(cmd, sizeof(cmd), "redis-cli -c -h %s -p 6379 GET %s%d", ip[i % NODES], prefix, i);
        snprintf(want, sizeof(want), "%d\n", i);
        FILE *f = popen(cmd, "r");
        if (f && fgets(line, sizeof(line), f))
            ok += !strcmp(line, want);
        if (f)
            pclose(f);
    }
    return ok;
}

/* A master SIGKILLed: Redis Cluster fails over by itself; back with its nodes.conf, it
 * follows the new master; nothing assigned. */
static void test_master_killed(void)
{
    static ctopo_result_t out;
    run_t run = {.bootstrapped = 1};
    CU_ASSERT_TRUE_FATAL(converge(&run, 30, &out));
    int m = out.shard[0].master;
    CU_ASSERT_FATAL(m >= 0);
    server_stop(&srv[m]);
    nap_ms(3000); /* node timeout 1 s: the replica is promoted */
    run.quiet = 1;
    converge(&run, 5, &out);
    run.quiet = 0;
    CU_ASSERT_EQUAL(out.shard[0].master, m ^ 1);
    CU_ASSERT_STRING_EQUAL(out.reason, "NotObserved");
    CU_ASSERT_EQUAL_FATAL(node_start(m, 0), 0);
    memset(run.cmds, 0, sizeof(run.cmds));
    CU_ASSERT_TRUE(converge(&run, 30, &out));
    CU_ASSERT_EQUAL(out.shard[0].master, m ^ 1);
    CU_ASSERT_EQUAL(run.cmds[CTOPO_ADDSLOTS], 0);
    CU_ASSERT_TRUE(redis_cli_check(0));
}

/* A master back without its nodes.conf: a new node, made a replica of its shard (never
 * given slots), its old id forgotten; the keys written before all there. */
static void test_master_lost_config(void)
{
    static ctopo_result_t out;
    run_t run = {.bootstrapped = 1};
    CU_ASSERT_TRUE_FATAL(converge(&run, 30, &out));
    CU_ASSERT_EQUAL(write_keys(300, "lost:"), 0);
    int m = out.shard[2].master;
    CU_ASSERT_FATAL(m >= 0);
    server_stop(&srv[m]);
    nap_ms(3000);
    char conf[320];
    snprintf(conf, sizeof(conf), "%s/n%d/nodes.conf", dir, m);
    CU_ASSERT_EQUAL(unlink(conf), 0); /* its AOF stays: it comes back with keys, claiming their slots */
    CU_ASSERT_EQUAL_FATAL(node_start(m, 0), 0);
    memset(run.cmds, 0, sizeof(run.cmds));
    CU_ASSERT_TRUE(converge(&run, 40, &out));
    CU_ASSERT_EQUAL(run.cmds[CTOPO_ADDSLOTS], 0);
    CU_ASSERT(run.cmds[CTOPO_MEET] >= 1);
    CU_ASSERT(run.cmds[CTOPO_FORGET] >= NODES - 1);
    CU_ASSERT_EQUAL(run.cmds[CTOPO_REPLICATE], 1);
    CU_ASSERT_EQUAL(run.cmds[CTOPO_FLUSH], 1);
    /* its AOF's keys made it claim their slots at load (epoch 0): never trusted; given back
     * by DELSLOTSRANGE, unless gossip from the higher-epoch owner took them first */
    CU_ASSERT(run.cmds[CTOPO_DELSLOTS] <= 1);
    CU_ASSERT_EQUAL(out.shard[2].master, m ^ 1);
    CU_ASSERT_TRUE(redis_cli_check(1));
    CU_ASSERT_EQUAL(keys_back(300, "lost:"), 300);
    CU_ASSERT_EQUAL(nodes_known(0), NODES); /* the old id is gone */
}

/* How many slots "0-5460,10923" covers. */
static int cn_slots_count_text(const char *text)
{
    int n = 0;
    for (const char *p = text; p && *p;) {
        char *end;
        long a = strtol(p, &end, 10), b = a;
        if (*end == '-')
            b = strtol(end + 1, &end, 10);
        n += (int)(b - a + 1);
        p = *end ? end + 1 : end;
    }
    return n;
}

/* Node i as a slot move's end. */
static void move_node(int i, slotmove_node_t *n)
{
    char *id = ask(i, "CLUSTER MYID");
    snprintf(n->pod, sizeof(n->pod), "node%d", i);
    snprintf(n->ip, sizeof(n->ip), "%s", ip[i]);
    n->port = 6379;
    snprintf(n->id, sizeof(n->id), "%s", id);
    free(id);
}

/* Slots with keys moved from shard 0's master to shard 1's by slotmove on real servers:
 * stopped after a few batches (max_bytes: the slot left open, redis-cli --cluster check
 * says so, the keys still readable through -ASK), then finished: clean, every key back,
 * the slots counted on the target by every node. */
static void test_slot_move(void)
{
    static ctopo_result_t out;
    run_t run = {.bootstrapped = 1};
    CU_ASSERT_TRUE_FATAL(converge(&run, 30, &out));
    CU_ASSERT_EQUAL(write_keys(3000, "mv:"), 0);
    int s = out.shard[0].master, t = out.shard[1].master, o = out.shard[2].master;
    CU_ASSERT_FATAL(s >= 0 && t >= 0 && o >= 0);
    static slotmove_job_t job;
    memset(&job, 0, sizeof(job));
    move_node(s, &job.source);
    move_node(t, &job.target);
    move_node(o, &job.others[0]);
    job.nothers = 1;
    job.nranges = 1;
    job.ranges[0] = (cn_range_t){5000, 5460}; /* shard 0's last 461 slots: about 85 keys */
    job.batch_bytes = 300;                     /* a few keys a MIGRATE */
    job.max_bytes = 1500;
    job.budget_ns = INT64_C(30000000000);
    job.wait_replicas = 1; /* as plan_move: the target's replica confirmed (REPLICATED) */
    slotmove_progress_t pr;
    char err[256];
    int64_t t0 = clock_mono_ns();
    CU_ASSERT_EQUAL(slotmove_run_sync(&job, NULL, NULL, &pr, err, sizeof(err)), 1);
    int64_t took = clock_mono_ns() - t0;
    CU_ASSERT_TRUE(pr.stopped);
    CU_ASSERT(pr.keys > 0);
    /* REPLICATED on Redis itself: the run ended once the target's replica acknowledged the
     * RESTOREs (a WAIT of the operator's own connection would not have counted them; the
     * blocking WAIT made Redis ask for the acknowledgement, sooner than the replica's
     * once a second): the replica holds every key the target does. (Its acknowledged
     * offset is not compared with the target's now: each GETACK is itself a few bytes of
     * the stream the replica acknowledges only with the next.) */
    int r = out.shard[1].replica[0];
    CU_ASSERT_FATAL(r >= 0);
    long long tkeys = dbsize(t);
    CU_ASSERT(tkeys > 0);
    CU_ASSERT_EQUAL(dbsize(r), tkeys);
    if (took >= 900 * NS_PER_MS)
        fprintf(stderr, "\n  the confirmed run took %lld ms", (long long)(took / NS_PER_MS));
    CU_ASSERT(took < 900 * NS_PER_MS);
    int first = pr.slots_done;
    CU_ASSERT_FALSE(redis_cli_check(o)); /* a slot open */
    CU_ASSERT_EQUAL(keys_back(3000, "mv:"), 3000);
    job.max_bytes = 0;
    int rc = slotmove_run_sync(&job, NULL, NULL, &pr, err, sizeof(err));
    if (rc)
        fprintf(stderr, "\n  slotmove: %s", err);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_EQUAL(first + pr.slots_done, 461); /* the first run's are skipped: moved already */
    CU_ASSERT_EQUAL(pr.skipped, first);
    nap_ms(500);
    CU_ASSERT_TRUE(redis_cli_check(o));
    CU_ASSERT_EQUAL(keys_back(3000, "mv:"), 3000);
    /* another node says the target owns them */
    char *text = ask(o, "CLUSTER NODES"), perr[128];
    cn_view_t *v = NULL;
    CU_ASSERT_EQUAL_FATAL(cn_parse(text, strlen(text), &v, perr, sizeof(perr)), 0);
    const cn_node_t *tn = cn_find(v, job.target.id);
    cn_slots_t held;
    memset(&held, 0, sizeof(held));
    if (tn)
        cn_slots_add_node(&held, tn);
    int owned = 0;
    for (int slot = 5000; slot <= 5460; slot++)
        owned += cn_slots_has(&held, slot);
    CU_ASSERT_EQUAL(owned, 461);
    cn_view_destroy(&v);
    free(text);
    /* and back, in one run (the budget, no bound): shard 0 as it was */
    slotmove_node_t tmp = job.source;
    job.source = job.target;
    job.target = tmp;
    CU_ASSERT_EQUAL(slotmove_run_sync(&job, NULL, NULL, &pr, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(pr.slots_done, 461);
    nap_ms(500);
    CU_ASSERT_TRUE(redis_cli_check(o));
    CU_ASSERT_EQUAL(keys_back(3000, "mv:"), 3000);
}

/* Shards 3 -> 4 and back, the planner and slotmove on real servers: the fourth shard's
 * nodes met, its replica following its seed, a quarter of the slots moved to it with their
 * keys; then shards 4 -> 3: its slots moved back, its nodes forgotten and reset, the
 * shard dropped (its servers stopped as its StatefulSet's deletion would); every key
 * back, redis-cli --cluster check clean at each end. */
static void test_reshard(void)
{
    static ctopo_result_t out;
    run_t run = {.bootstrapped = 1};
    CU_ASSERT_TRUE_FATAL(converge(&run, 30, &out));
    CU_ASSERT_EQUAL(write_keys(2000, "rs:"), 0);
    for (int i = NODES; i < NODES_MAX; i++)
        CU_ASSERT_EQUAL_FATAL(node_start(i, 1), 0);
    nnodes = NODES_MAX;
    spec_shards = 4;
    memset(run.cmds, 0, sizeof(run.cmds));
    CU_ASSERT_TRUE(converge(&run, 120, &out));
    CU_ASSERT_EQUAL(run.cmds[CTOPO_ADDSLOTS], 0);
    CU_ASSERT(run.cmds[CTOPO_MEET] >= 1);
    CU_ASSERT_EQUAL(run.moved, 4096);
    for (int k = 0; k < 4; k++)
        CU_ASSERT_EQUAL(cn_slots_count_text(out.shard[k].slots), 4096);
    CU_ASSERT_TRUE(redis_cli_check(7));
    CU_ASSERT_EQUAL(keys_back(2000, "rs:"), 2000);
    /* and back to three */
    spec_shards = 3;
    run.moved = 0;
    run.until_dropped = 1;
    memset(run.cmds, 0, sizeof(run.cmds));
    CU_ASSERT_TRUE(converge(&run, 120, &out));
    CU_ASSERT_EQUAL(run.moved, 4096);
    CU_ASSERT_EQUAL(run.cmds[CTOPO_RESET], 2);
    for (int i = NODES; i < NODES_MAX; i++)
        server_stop(&srv[i]);
    nnodes = NODES;
    run.until_dropped = 0;
    CU_ASSERT_TRUE(converge(&run, 60, &out));
    CU_ASSERT_TRUE(redis_cli_check(0));
    CU_ASSERT_EQUAL(keys_back(2000, "rs:"), 2000);
    CU_ASSERT_EQUAL(nodes_known(0), NODES); /* the fourth shard's nodes forgotten */
}

static const cu_entry_t tests[] = {
    CU_SUITE("cluster mode on real redis-server processes"),
    {"bootstrap, with a crash after the first ADDSLOTSRANGE", test_bootstrap},
    {"a master SIGKILLed: failover, then it follows", test_master_killed},
    {"a master back without nodes.conf: forgotten, rejoins as replica", test_master_lost_config},
    {"slots with keys moved, stopped halfway, resumed, moved back", test_slot_move},
    {"shards 3 -> 4 -> 3: planned, moved, retired", test_reshard},
};

CU_HOOKS({"cluster mode on real redis-server processes", setup, teardown, NULL, NULL});
CU_MAIN(tests)
