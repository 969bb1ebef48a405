/* test_slotmove: moving hash slots (workerd/slotmove.h).
 *   - the machine as a table: a state and an answer, the next state;
 *   - runs against a model of Redis Cluster's answers (each node's own slot table, its
 *     IMPORTING/MIGRATING marks, its keys; CLUSTER SETSLOT, GETKEYSINSLOT, MIGRATE and
 *     MULTI/EXEC as Redis 7 answers them, refusals included): one slot with keys moved
 *     whole (a group's close one transaction, one epoch bump and PONG); a run
 *     cut off after every single command (a worker or the operator killed there), then a
 *     fresh run: the slot ends on the target, closed everywhere, every key there once
 *     with its value; a MIGRATE cut off after copying a key and before deleting it
 *     (BUSYKEY, then REPLACE); the budget and max_bytes stopping a run between batches;
 *     a refusal stopping it with Redis's words;
 *   - REPLICATED (wait_replicas): a run that moved keys confirms the target's replicas
 *     acknowledged them (INFO replication, WAIT to ask for the acknowledgements), as a
 *     table of replica states;
 *   - the job as a plan action's JSON body, there and back, and bodies refused.
 * The same machine runs against real redis-server processes in test_cluster_live.c. */
#include "cu_table.h"
#include "slotmove.h"

#include <CUnit/CUnit.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- replies -------------------------------------------------------------------------- */

/* The reply RESP text resp parses to (hiredis's reader: the real reply objects). */
static redisReply *reply_of(const char *resp, size_t len)
{
    redisReader *rd = redisReaderCreate();
    void *r = NULL;
    redisReaderFeed(rd, resp, len);
    CU_ASSERT_EQUAL_FATAL(redisReaderGetReply(rd, &r), REDIS_OK);
    redisReaderFree(rd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    return r;
}

static redisReply *status_of(const char *s)
{
    char b[256];
    int n = snprintf(b, sizeof(b), "+%s\r\n", s);
    return reply_of(b, (size_t)n);
}

static redisReply *error_of(const char *s)
{
    char b[512];
    int n = snprintf(b, sizeof(b), "-%s\r\n", s);
    return reply_of(b, (size_t)n);
}

/* ---- the machine as a table ------------------------------------------------------------- */

static void test_table(void)
{
    static const struct {
        slotmove_state_t from;
        const char *resp; /* NULL: no answer (the node could not be asked) */
        slotmove_state_t to;
        int replace;
    } rows[] = {
        {SLOTMOVE_IMPORTING, "+OK\r\n", SLOTMOVE_MIGRATING, 0},
        {SLOTMOVE_IMPORTING, "-ERR I'm already the owner of hash slot 7\r\n", SLOTMOVE_NODE_SOURCE, 0},
        {SLOTMOVE_IMPORTING, "-ERR I don't know about node abc\r\n", SLOTMOVE_FAILED, 0},
        {SLOTMOVE_IMPORTING, NULL, SLOTMOVE_FAILED, 0},
        {SLOTMOVE_MIGRATING, "+OK\r\n", SLOTMOVE_GETKEYS, 0},
        {SLOTMOVE_MIGRATING, "-ERR I'm not the owner of hash slot 7\r\n", SLOTMOVE_FAILED, 0},
        {SLOTMOVE_GETKEYS, "*0\r\n", SLOTMOVE_NODE_TARGET, 0},
        {SLOTMOVE_GETKEYS, "*2\r\n$1\r\na\r\n$1\r\nb\r\n", SLOTMOVE_SIZES, 0},
        {SLOTMOVE_GETKEYS, "-ERR Invalid slot\r\n", SLOTMOVE_FAILED, 0},
        {SLOTMOVE_MIGRATE, "+OK\r\n", SLOTMOVE_GETKEYS, 0},
        {SLOTMOVE_MIGRATE, "+NOKEY\r\n", SLOTMOVE_GETKEYS, 0},
        {SLOTMOVE_MIGRATE, "-BUSYKEY Target key name already exists.\r\n", SLOTMOVE_MIGRATE, 1},
        {SLOTMOVE_MIGRATE, "-IOERR error or timeout reading to target instance\r\n", SLOTMOVE_FAILED, 0},
        {SLOTMOVE_NODE_TARGET, "+OK\r\n", SLOTMOVE_NODE_SOURCE, 0},
        {SLOTMOVE_NODE_TARGET, "-ERR Target is not a master\r\n", SLOTMOVE_FAILED, 0},
        {SLOTMOVE_NODE_SOURCE, "+OK\r\n", SLOTMOVE_NODE_OTHERS, 0},
        {SLOTMOVE_NODE_SOURCE, "-ERR Please use SETSLOT only with masters.\r\n", SLOTMOVE_NODE_OTHERS, 0},
        {SLOTMOVE_NODE_SOURCE,
         "-ERR Can't assign hashslot 7 to a different node while I still hold keys for this hash slot.\r\n",
         SLOTMOVE_FAILED, 0},
        {SLOTMOVE_NODE_OTHERS, "-ERR whatever\r\n", SLOTMOVE_NODE_OTHERS, 0}, /* the first of two */
    };
    slotmove_job_t job = {.nothers = 2, .batch_bytes = 100};
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        slotmove_t m;
        slotmove_start(&m, 7);
        m.state = rows[i].from;
        redisReply *r = rows[i].resp ? reply_of(rows[i].resp, strlen(rows[i].resp)) : NULL;
        slotmove_feed(&m, &job, r, NULL, "10.0.0.1:6379: connect: Connection refused");
        if (m.state != rows[i].to || m.replace != rows[i].replace)
            printf("\n  row %zu: %s + %s -> %s (want %s)\n", i, slotmove_state_name(rows[i].from),
                   rows[i].resp ? rows[i].resp : "(none)", slotmove_state_name(m.state),
                   slotmove_state_name(rows[i].to));
        CU_ASSERT_EQUAL(m.state, rows[i].to);
        CU_ASSERT_EQUAL(m.replace, rows[i].replace);
        if (m.state == SLOTMOVE_FAILED)
            CU_ASSERT(strncmp(m.why, "slot 7: ", 8) == 0);
        freeReplyObject(r);
    }
    /* no answer at all says why */
    slotmove_t m;
    slotmove_start(&m, 7);
    slotmove_feed(&m, &job, NULL, NULL, "10.0.0.1:6379: connect: Connection refused");
    CU_ASSERT_PTR_NOT_NULL(strstr(m.why, "Connection refused"));
    /* sizes: a batch is the keys whose sizes sum to batch_bytes, at least one */
    int64_t sizes[4] = {40, 50, 30, 10};
    slotmove_start(&m, 7);
    m.state = SLOTMOVE_SIZES;
    m.nkeys = 4;
    slotmove_feed(&m, &job, NULL, sizes, NULL);
    CU_ASSERT_EQUAL(m.state, SLOTMOVE_MIGRATE);
    CU_ASSERT_EQUAL(m.take, 2);
    int64_t big[2] = {500, 10};
    m.state = SLOTMOVE_SIZES;
    m.nkeys = 2;
    slotmove_feed(&m, &job, NULL, big, NULL);
    CU_ASSERT_EQUAL(m.take, 1);
    /* NODE_OTHERS goes through each other master, then DONE */
    slotmove_start(&m, 7);
    m.state = SLOTMOVE_NODE_OTHERS;
    slotmove_feed(&m, &job, NULL, NULL, "x");
    CU_ASSERT_EQUAL(m.state, SLOTMOVE_NODE_OTHERS);
    slotmove_feed(&m, &job, NULL, NULL, "x");
    CU_ASSERT_EQUAL(m.state, SLOTMOVE_DONE);
    job.nothers = 0;
    slotmove_start(&m, 7);
    m.state = SLOTMOVE_NODE_SOURCE;
    redisReply *ok = status_of("OK");
    slotmove_feed(&m, &job, ok, NULL, NULL);
    CU_ASSERT_EQUAL(m.state, SLOTMOVE_DONE);
    freeReplyObject(ok);
}

/* ---- a model of Redis Cluster's answers ------------------------------------------------- */

#define NODES 4 /* 0 source, 1 target, 2 and 3 other masters */
#define SLOTS 8 /* the slots the model knows */
#define MAXKEYS 512

typedef struct {
    char key[16];
    char val[16];
    int slot;
    int sized; /* MEMORY USAGEs asked of it (LISTING: once) */
} kv_t;

typedef struct {
    int owner[SLOTS];     /* this node's own table: the owner of each slot */
    int importing[SLOTS]; /* from node, -1 */
    int migrating[SLOTS]; /* to node, -1 */
    kv_t kv[MAXKEYS];
    int nkv;
} mnode_t;

typedef struct {
    mnode_t n[NODES];
    char id[NODES][CN_ID_LEN + 1];
    int calls;      /* commands answered */
    int fail_at;    /* the command that gets no answer (a crash there), -1 none */
    int cut_migrate; /* the MIGRATE that copies its first key and then gets no answer, -1 none */
    int migrates;
    int ticks;      /* keepalives the run gave */
    int64_t now;
    int64_t waited; /* what the run waited (pacing), in ns */
    /* REPLICATED: the target's replica */
    int64_t toff;     /* the target's master_repl_offset (a key restored: + 1) */
    int64_t acked;    /* the replica's acknowledged offset */
    const char *state; /* its state= ("online"), NULL: no replica line */
    int ack_after;    /* it acknowledges toff at the ack_after-th WAIT (0: at once; -1 never) */
    int infos, waits; /* INFO replication and WAIT on the target */
    int pipelines;    /* pipelines sent */
    int mig_pipelines; /* PIPELINES: pipelines of MIGRATEs */
    int64_t mig_at[64]; /* the clock at each of the first 64 of them */
    int most_migrates; /* the most MIGRATEs, and keys, one pipeline carried */
    int most_keys;
    int refuse_slot;  /* the target refuses IMPORTING of this slot (-1 none) */
    int info_fails;   /* INFO on the target gets no answer */
    int view_after;   /* the target's replica credits it with its slots from its view_after-th
                       * CLUSTER NODES on (1: at once; -1 never; 0: not in the job) */
    int views;        /* CLUSTER NODES on the target's replica */
    int key_bytes;    /* MEMORY USAGE of every key (0: 40) */
    int asked[16];    /* LISTING: the first GETKEYSINSLOT counts asked */
    int nasked;
    int getkeys, sizes; /* GETKEYSINSLOTs and MEMORY USAGEs answered */
    int most_sizes;   /* the most MEMORY USAGEs one pipeline carried */
    int broadcasts;   /* SETSLOT NODE <itself> on a node importing the slot: Redis bumps its
                       * epoch and sends every node a PONG (CLOSING) */
    int transactions; /* EXECs run */
    int queued[NODES]; /* MULTI on a node's connection: how many commands it queued; -1 none */
    char queue[NODES][2 * SLOTMOVE_MAX_GROUP][5][48]; /* their arguments (CLUSTER SETSLOT only) */
    int queue_argc[NODES][2 * SLOTMOVE_MAX_GROUP];
} model_t;

static void model_init(model_t *w, int keys_in_slot3)
{
    memset(w, 0, sizeof(*w));
    w->fail_at = w->cut_migrate = w->refuse_slot = -1;
    for (int i = 0; i < NODES; i++)
        w->queued[i] = -1;
    w->state = "online";
    for (int i = 0; i < NODES; i++) {
        memset(w->id[i], '0' + i, CN_ID_LEN);
        for (int s = 0; s < SLOTS; s++) {
            w->n[i].owner[s] = 0; /* node 0 (the source) owns every slot of the model */
            w->n[i].importing[s] = w->n[i].migrating[s] = -1;
        }
    }
    for (int k = 0; k < keys_in_slot3; k++) {
        kv_t *kv = &w->n[0].kv[w->n[0].nkv++];
        snprintf(kv->key, sizeof(kv->key), "k%d", k);
        snprintf(kv->val, sizeof(kv->val), "v%d", k);
        kv->slot = 3;
    }
}

static int node_by_id(const model_t *w, const char *id)
{
    for (int i = 0; i < NODES; i++)
        if (!strcmp(w->id[i], id))
            return i;
    return -1;
}

static int find_key(const mnode_t *n, const char *key)
{
    for (int i = 0; i < n->nkv; i++)
        if (!strcmp(n->kv[i].key, key))
            return i;
    return -1;
}

static int keys_in(const mnode_t *n, int slot)
{
    int c = 0;
    for (int i = 0; i < n->nkv; i++)
        c += n->kv[i].slot == slot;
    return c;
}

static void del_key(mnode_t *n, int i)
{
    n->kv[i] = n->kv[--n->nkv];
}

static redisReply *m_setslot(model_t *w, int me, int argc, const char *const *argv)
{
    mnode_t *n = &w->n[me];
    int s = (int)strtol(argv[2], NULL, 10);
    const char *how = argv[3];
    int who = argc > 4 ? node_by_id(w, argv[4]) : -1;
    if (!strcmp(how, "STABLE")) {
        n->importing[s] = n->migrating[s] = -1;
        return status_of("OK");
    }
    char e[200];
    if (who < 0) {
        snprintf(e, sizeof(e), "ERR I don't know about node %s", argc > 4 ? argv[4] : "");
        return error_of(e);
    }
    if (!strcmp(how, "IMPORTING")) {
        if (s == w->refuse_slot)
            return error_of("ERR the model refuses this slot");
        if (n->owner[s] == me) {
            snprintf(e, sizeof(e), "ERR I'm already the owner of hash slot %d", s);
            return error_of(e);
        }
        n->importing[s] = who;
    } else if (!strcmp(how, "MIGRATING")) {
        if (n->owner[s] != me) {
            snprintf(e, sizeof(e), "ERR I'm not the owner of hash slot %d", s);
            return error_of(e);
        }
        n->migrating[s] = who;
    } else if (!strcmp(how, "NODE")) {
        if (n->owner[s] == me && who != me && keys_in(n, s)) {
            snprintf(e, sizeof(e),
                     "ERR Can't assign hashslot %d to a different node while I still hold keys for this hash slot.", s);
            return error_of(e);
        }
        if (who != me && n->migrating[s] >= 0 && keys_in(n, s) == 0)
            n->migrating[s] = -1;
        if (who == me && n->importing[s] >= 0)
            w->broadcasts++; /* Redis: the epoch bumped, a PONG to every node */
        if (who == me)
            n->importing[s] = -1;
        n->owner[s] = who;
    }
    return status_of("OK");
}

/* GETKEYSINSLOT slot count: the first count keys of slot, in the node's order. */
static redisReply *m_getkeys(model_t *w, int me, int slot, int count)
{
    static char b[32768];
    size_t off = 0;
    int c = keys_in(&w->n[me], slot);
    c = c < count ? c : count;
    if (w->nasked < 16)
        w->asked[w->nasked++] = count;
    w->getkeys++;
    off += (size_t)snprintf(b + off, sizeof(b) - off, "*%d\r\n", c);
    for (int i = 0, n = 0; i < w->n[me].nkv && n < c; i++)
        if (w->n[me].kv[i].slot == slot && ++n)
            off += (size_t)snprintf(b + off, sizeof(b) - off, "$%zu\r\n%s\r\n", strlen(w->n[me].kv[i].key),
                                    w->n[me].kv[i].key);
    return reply_of(b, off);
}

/* MEMORY USAGE key on node me: w->key_bytes (40), nil when the node lacks it. */
static redisReply *m_memory(model_t *w, int me, const char *key)
{
    int at = find_key(&w->n[me], key);
    char b[32];
    w->sizes++;
    if (at < 0)
        return reply_of("$-1\r\n", 5);
    w->n[me].kv[at].sized++;
    int len = snprintf(b, sizeof(b), ":%d\r\n", w->key_bytes ? w->key_bytes : 40);
    return reply_of(b, (size_t)len);
}

/* MIGRATE from me to the target (the model's node 1) of keys after "KEYS". */
static redisReply *m_migrate(model_t *w, int me, int argc, const char *const *argv)
{
    int replace = 0, k = 0, moved = 0;
    for (; k < argc && strcmp(argv[k], "KEYS"); k++)
        replace |= !strcmp(argv[k], "REPLACE");
    mnode_t *src = &w->n[me], *dst = &w->n[1];
    int cut = w->migrates++ == w->cut_migrate;
    for (int i = k + 1; i < argc; i++) {
        int at = find_key(src, argv[i]);
        if (at < 0)
            continue;
        int there = find_key(dst, argv[i]);
        if (there >= 0 && !replace)
            return error_of("BUSYKEY Target key name already exists.");
        if (there >= 0)
            del_key(dst, there);
        dst->kv[dst->nkv++] = src->kv[at];
        w->toff++;
        if (cut)
            return NULL; /* copied, not deleted: the connection went */
        del_key(src, at);
        moved++;
    }
    return status_of(moved ? "OK" : "NOKEY");
}

/* CLUSTER NODES of node me: its own line (the model's slots it owns, its open ones). */
static redisReply *m_nodes(const model_t *w, int me)
{
    char line[2048], b[2200];
    const mnode_t *n = &w->n[me];
    size_t off = (size_t)snprintf(line, sizeof(line), "%s 10.0.0.%d:6379@16379 myself,master - 0 0 1 connected",
                                  w->id[me], me + 1);
    for (int s = 0; s < SLOTS; s++) {
        if (n->owner[s] == me)
            off += (size_t)snprintf(line + off, sizeof(line) - off, " %d", s);
        if (n->migrating[s] >= 0)
            off += (size_t)snprintf(line + off, sizeof(line) - off, " [%d->-%s]", s, w->id[n->migrating[s]]);
        if (n->importing[s] >= 0)
            off += (size_t)snprintf(line + off, sizeof(line) - off, " [%d-<-%s]", s, w->id[n->importing[s]]);
    }
    int len = snprintf(b, sizeof(b), "$%zu\r\n%s\n\r\n", off + 1, line);
    return reply_of(b, (size_t)len);
}

/* INFO replication and WAIT on the target (REPLICATED): its offset, its replica's line. */
static redisReply *m_replication(model_t *w, const char *cmd, char *err, size_t errlen)
{
    char text[512], b[600];
    if (!strcmp(cmd, "WAIT")) {
        if (++w->waits >= w->ack_after && w->ack_after >= 0)
            w->acked = w->toff; /* asked, it acknowledges */
        return reply_of(":0\r\n", 4);
    }
    w->infos++;
    if (w->ack_after == 0)
        w->acked = w->toff;
    if (w->info_fails) {
        snprintf(err, errlen, "model: the target does not answer");
        return NULL;
    }
    int n = snprintf(text, sizeof(text), "# Replication\r\nrole:master\r\nconnected_slaves:%d\r\n", !!w->state);
    if (w->state)
        n += snprintf(text + n, sizeof(text) - (size_t)n, "slave0:ip=10.0.0.9,port=6379,state=%s,offset=%lld,lag=0\r\n",
                      w->state, (long long)w->acked);
    n += snprintf(text + n, sizeof(text) - (size_t)n, "master_repl_offset:%lld\r\n", (long long)w->toff);
    int len = snprintf(b, sizeof(b), "$%d\r\n%s\r\n", n, text);
    return reply_of(b, (size_t)len);
}

/* CLUSTER NODES on the target's replica (REPLICATED): its own line and the target's,
 * with the slots the target owns once it has heard (view_after). */
static redisReply *m_replica_view(model_t *w)
{
    char text[2048], b[2200];
    w->views++;
    int heard = w->view_after > 0 && w->views >= w->view_after;
    size_t off = (size_t)snprintf(text, sizeof(text),
                                  "%s 10.0.0.9:6379@16379 myself,slave %s 0 0 1 connected\n"
                                  "%s 10.0.0.2:6379@16379 master - 0 0 1 connected",
                                  "9999999999999999999999999999999999999999", w->id[1], w->id[1]);
    for (int s = 0; s < SLOTS && heard; s++)
        if (w->n[1].owner[s] == 1)
            off += (size_t)snprintf(text + off, sizeof(text) - off, " %d", s);
    int len = snprintf(b, sizeof(b), "$%zu\r\n%s\n\r\n", off + 1, text);
    return reply_of(b, (size_t)len);
}

static redisReply *m_command(void *user, int to, int argc, const char *const *argv, const size_t *lens, char *err,
                             size_t errlen);

/* MULTI, a command queued, EXEC on node me's connection, as Redis answers them (the queued
 * commands run at EXEC, their answers its array); NULL when argv is none of those. */
static redisReply *m_transaction(model_t *w, int me, int argc, const char *const *argv)
{
    if (!strcmp(argv[0], "MULTI")) {
        w->queued[me] = 0;
        return status_of("OK");
    }
    if (w->queued[me] < 0)
        return NULL;
    if (strcmp(argv[0], "EXEC")) {
        int q = w->queued[me]++;
        CU_ASSERT_FATAL(q < 2 * SLOTMOVE_MAX_GROUP && argc <= 5);
        w->queue_argc[me][q] = argc;
        for (int a = 0; a < argc; a++)
            snprintf(w->queue[me][q][a], sizeof(w->queue[me][q][a]), "%s", argv[a]);
        return status_of("QUEUED");
    }
    int n = w->queued[me];
    w->queued[me] = -1;
    w->transactions++;
    redisReply *ex = calloc(1, sizeof(*ex));
    CU_ASSERT_PTR_NOT_NULL_FATAL(ex);
    ex->type = REDIS_REPLY_ARRAY;
    ex->elements = (size_t)n;
    ex->element = calloc((size_t)n + 1, sizeof(*ex->element));
    CU_ASSERT_PTR_NOT_NULL_FATAL(ex->element);
    for (int q = 0; q < n; q++) {
        const char *args[5];
        for (int a = 0; a < w->queue_argc[me][q]; a++)
            args[a] = w->queue[me][q][a];
        ex->element[q] = m_setslot(w, me, w->queue_argc[me][q], args);
    }
    return ex;
}

static redisReply *m_command(void *user, int to, int argc, const char *const *argv, const size_t *lens, char *err,
                             size_t errlen)
{
    (void)lens;
    model_t *w = user;
    int me = to == SLOTMOVE_TO_SOURCE ? 0 : to == SLOTMOVE_TO_TARGET ? 1 : 2 + to;
    if (w->calls++ == w->fail_at) {
        for (int i = 0; i < NODES; i++) /* the connections go, and what they had queued */
            w->queued[i] = -1;
        snprintf(err, errlen, "model: the worker was killed here");
        return NULL;
    }
    redisReply *t = me < NODES ? m_transaction(w, me, argc, argv) : NULL;
    if (t)
        return t;
    if (to >= SLOTMOVE_MAX_OTHERS)
        return m_replica_view(w);
    if (!strcmp(argv[0], "MIGRATE")) {
        redisReply *r = m_migrate(w, me, argc, argv);
        if (!r)
            snprintf(err, errlen, "model: the connection went in the middle of MIGRATE");
        return r;
    }
    if (!strcmp(argv[0], "INFO") || !strcmp(argv[0], "WAIT"))
        return me == 1 ? m_replication(w, argv[0], err, errlen) : error_of("ERR not the target");
    if (argc == 2 && !strcmp(argv[1], "NODES"))
        return m_nodes(w, me);
    if (argc >= 4 && !strcmp(argv[1], "SETSLOT"))
        return m_setslot(w, me, argc, argv);
    if (argc == 4 && !strcmp(argv[1], "GETKEYSINSLOT"))
        return m_getkeys(w, me, (int)strtol(argv[2], NULL, 10), (int)strtol(argv[3], NULL, 10));
    if (argc == 3 && !strcmp(argv[0], "MEMORY") && !strcmp(argv[1], "USAGE"))
        return m_memory(w, me, argv[2]);
    return error_of("ERR unknown command");
}

/* Pipelined: each command in turn, as Redis runs them; one without an answer (the worker
 * killed there) ends it with every reply NULL, as redis_sync_pipeline. */
static int m_pipeline(void *user, int to, size_t n, const int *argcs, const char *const *const *argvs,
                      const size_t *const *lenss, redisReply **replies, char *err, size_t errlen)
{
    model_t *w = user;
    w->pipelines++;
    int migrates = 0, keys = 0, sizes = 0;
    for (size_t i = 0; i < n; i++) {
        sizes += !strcmp(argvs[i][0], "MEMORY");
        if (!strcmp(argvs[i][0], "MIGRATE")) {
            migrates++;
            for (int a = 0; a < argcs[i]; a++)
                if (!strcmp(argvs[i][a], "KEYS"))
                    keys += argcs[i] - a - 1;
        }
    }
    w->most_sizes = sizes > w->most_sizes ? sizes : w->most_sizes;
    if (migrates > 0 && w->mig_pipelines < 64)
        w->mig_at[w->mig_pipelines] = w->now;
    w->mig_pipelines += migrates > 0;
    w->most_migrates = migrates > w->most_migrates ? migrates : w->most_migrates;
    w->most_keys = keys > w->most_keys ? keys : w->most_keys;
    for (size_t i = 0; i < n; i++)
        if (!(replies[i] = m_command(user, to, argcs[i], argvs[i], lenss[i], err, errlen))) {
            for (size_t k = 0; k < n; k++) {
                freeReplyObject(k < i ? replies[k] : NULL);
                replies[k] = NULL;
            }
            return -1;
        }
    return 0;
}

static void m_tick(void *arg)
{
    model_t *w = arg;
    w->ticks++;
}

static int64_t m_now(void *user)
{
    model_t *w = user;
    return w->now += 1000000; /* 1 ms a look */
}

static void m_wait(void *user, int64_t ns)
{
    model_t *w = user;
    w->now += ns;
    w->waited += ns;
}

static void job_of(const model_t *w, slotmove_job_t *job, int from, int to, int64_t batch_bytes)
{
    memset(job, 0, sizeof(*job));
    const char *ips[NODES] = {"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"};
    slotmove_node_t *nodes[NODES] = {&job->source, &job->target, &job->others[0], &job->others[1]};
    for (int i = 0; i < NODES; i++) {
        snprintf(nodes[i]->pod, sizeof(nodes[i]->pod), "c-shard%d-0", i);
        snprintf(nodes[i]->ip, sizeof(nodes[i]->ip), "%s", ips[i]);
        nodes[i]->port = 6379;
        snprintf(nodes[i]->id, sizeof(nodes[i]->id), "%s", w->id[i]);
    }
    job->nothers = 2;
    job->nranges = 1;
    job->ranges[0] = (cn_range_t){from, to};
    job->batch_bytes = batch_bytes;
    job->budget_ns = INT64_C(1000000000000);
}

/* The slot moved: owned by the target in the source's and the target's tables (the other
 * masters' too, unless the run ended before telling them: the model has no gossip, Redis
 * tells them with the target's epoch bump), open nowhere, the keys all on the target
 * with their values, none left on the source. */
static void check_moved(const model_t *w, int slot, int keys)
{
    for (int i = 0; i < NODES; i++) {
        CU_ASSERT(w->n[i].owner[slot] == 1 || (i >= 2 && w->n[i].owner[slot] == 0));
        CU_ASSERT_EQUAL(w->n[i].importing[slot], -1);
        CU_ASSERT_EQUAL(w->n[i].migrating[slot], -1);
    }
    CU_ASSERT_EQUAL(keys_in(&w->n[0], slot), 0);
    CU_ASSERT_EQUAL(keys_in(&w->n[1], slot), keys);
    for (int k = 0; k < keys; k++) {
        char key[16], val[16];
        snprintf(key, sizeof(key), "k%d", k);
        snprintf(val, sizeof(val), "v%d", k);
        int at = find_key(&w->n[1], key);
        CU_ASSERT(at >= 0);
        if (at >= 0)
            CU_ASSERT_STRING_EQUAL(w->n[1].kv[at].val, val);
    }
}

static void test_moves_a_slot(void)
{
    /* GROUPS: the three slots in lockstep, pipelined (then one by one: io without pipeline),
     * and a group of one slot (each slot through its steps before the next) */
    static const struct {
        int group, pipelined, ticks, round_trips, closes;
    } rows[] = {
        /* CLUSTER NODES, IMPORTING, MIGRATING, 3 GETKEYS (LISTING: slot 3's first 16 keys,
         * its 9 others, none), 2 SIZES (16 keys, then the 9: the 6 of the second batch were
         * sized in the first), 3 MIGRATE, NODE x 4; CLOSING: the target closes the group in
         * one MULTI/EXEC and only its last slot has the target bump its epoch and tell
         * every node (a PONG) */
        {0, 1, 1 + 4, 1 + 2 + 3 + 2 + 3 + 4, 1},
        {0, 0, 1 + 4, 0, 1},
        {1, 1, 3 + 6, 1 + 3 * (2 + 1 + 4) + 2 + 2 + 3, 3}, /* (slot 3: 2 more GETKEYS, 2 SIZES, 3 MIGRATE) */
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        static model_t w;
        model_init(&w, 25);
        slotmove_job_t job;
        job_of(&w, &job, 2, 4, 400); /* 10 keys a batch */
        job.group_slots = rows[i].group;
        slotmove_io_t io = {m_command, rows[i].pipelined ? m_pipeline : NULL, m_now, &w, m_tick, &w, NULL};
        slotmove_progress_t pr;
        char err[256];
        CU_ASSERT_EQUAL(slotmove_run(&job, &io, "s3cret", &pr, err, sizeof(err)), 0);
        CU_ASSERT_EQUAL(pr.slots_done, 3);
        CU_ASSERT_EQUAL(pr.keys, 25);
        CU_ASSERT_EQUAL(pr.bytes, 25 * 40);
        CU_ASSERT_EQUAL(w.migrates, 3);         /* 10 + 10 + 5 */
        CU_ASSERT(w.ticks >= rows[i].ticks);    /* a keepalive at each group's start and each batch */
        CU_ASSERT_EQUAL(pr.round_trips, rows[i].round_trips ? rows[i].round_trips : pr.commands);
        CU_ASSERT_EQUAL(w.pipelines, rows[i].pipelined ? pr.round_trips - 1 : 0);
        CU_ASSERT_FALSE(pr.stopped);
        CU_ASSERT_EQUAL(w.transactions, rows[i].closes); /* a group's close: one EXEC, */
        CU_ASSERT_EQUAL(w.broadcasts, rows[i].closes);   /* one epoch bump and PONG */
        check_moved(&w, 3, 25);
        for (int s = 2; s <= 4; s++)
            CU_ASSERT_EQUAL(w.n[2].owner[s], 1);
        CU_ASSERT_EQUAL(w.n[0].owner[5], 0); /* the rest untouched */
    }
}

/* Killed after any one command, then run again from scratch: the same end. */
static void test_every_crash_point(void)
{
    static model_t w;
    model_init(&w, 25);
    slotmove_job_t job;
    job_of(&w, &job, 3, 3, 400);
    slotmove_io_t io = {m_command, m_pipeline, m_now, &w, m_tick, &w, NULL};
    slotmove_progress_t pr;
    char err[256];
    CU_ASSERT_EQUAL(slotmove_run(&job, &io, NULL, &pr, err, sizeof(err)), 0);
    int total = w.calls; /* the commands of a whole run */
    CU_ASSERT(total >= 10);
    for (int k = 0; k < total; k++) {
        model_init(&w, 25);
        w.fail_at = k;
        int rc = slotmove_run(&job, &io, NULL, &pr, err, sizeof(err));
        if (k < total - (int)job.nothers) { /* the other masters' answers are not waited for */
            CU_ASSERT_EQUAL(rc, -1);
            CU_ASSERT_PTR_NOT_NULL(strstr(err, "killed here"));
        } else
            CU_ASSERT_EQUAL(rc, 0);
        /* the next reconcile: a fresh run of the same job */
        w.fail_at = -1;
        rc = slotmove_run(&job, &io, NULL, &pr, err, sizeof(err));
        if (rc != 0)
            printf("\n  crash at command %d: the second run failed: %s\n", k, err);
        CU_ASSERT_EQUAL(rc, 0);
        check_moved(&w, 3, 25);
    }
}

/* n keys "<prefix><i>" = "v<i>" into slot of the source. */
static void add_keys(model_t *w, int slot, const char *prefix, int n)
{
    for (int k = 0; k < n; k++) {
        kv_t *kv = &w->n[0].kv[w->n[0].nkv++];
        snprintf(kv->key, sizeof(kv->key), "%s%d", prefix, k);
        snprintf(kv->val, sizeof(kv->val), "v%d", k);
        kv->slot = slot;
    }
}

/* Slots 2-6 moved: owned by the target on both ends, open nowhere, slot 3's 25 keys and
 * slot 5's 12 on the target once each. */
static void check_group_moved(const model_t *w)
{
    for (int s = 2; s <= 6; s++)
        CU_ASSERT(w->n[0].owner[s] == 1 && w->n[1].owner[s] == 1);
    check_moved(w, 3, 25);
    CU_ASSERT_EQUAL(keys_in(&w->n[0], 5), 0);
    CU_ASSERT_EQUAL(keys_in(&w->n[1], 5), 12);
    for (int s = 2; s <= 6; s++)
        CU_ASSERT(w->n[0].migrating[s] < 0 && w->n[1].importing[s] < 0);
}

/* The model of the group tests: 25 keys in slot 3, 12 in slot 5; the job slots 2-6. */
static void group_model(model_t *w, slotmove_job_t *job)
{
    model_init(w, 25);
    add_keys(w, 5, "j", 12);
    job_of(w, job, 2, 6, 400);
}

static int open_on_source(const model_t *w)
{
    int n = 0;
    for (int s = 0; s < SLOTS; s++)
        n += w->n[0].migrating[s] >= 0;
    return n;
}

/* GROUPS: five slots (two with keys) in lockstep, killed after any one command (within a
 * pipeline too: the commands before it ran), then run again from scratch: the several
 * slots left open are all finished, nothing lost; pipelined and one by one. */
static void test_group_crash_points(void)
{
    for (int pipelined = 0; pipelined < 2; pipelined++) {
        static model_t w;
        slotmove_job_t job;
        group_model(&w, &job);
        slotmove_io_t io = {m_command, pipelined ? m_pipeline : NULL, m_now, &w, m_tick, &w, NULL};
        slotmove_progress_t pr;
        char err[256];
        CU_ASSERT_EQUAL(slotmove_run(&job, &io, NULL, &pr, err, sizeof(err)), 0);
        check_group_moved(&w);
        int total = w.calls, most_open = 0;
        for (int k = 0; k < total; k++) {
            group_model(&w, &job);
            w.fail_at = k;
            int rc = slotmove_run(&job, &io, NULL, &pr, err, sizeof(err));
            CU_ASSERT(rc == -1 || rc == 0);
            CU_ASSERT(rc == 0 || strstr(err, "killed here"));
            if (open_on_source(&w) > most_open)
                most_open = open_on_source(&w);
            w.fail_at = -1;
            rc = slotmove_run(&job, &io, NULL, &pr, err, sizeof(err));
            if (rc != 0)
                printf("\n  crash at command %d: the second run failed: %s\n", k, err);
            CU_ASSERT_EQUAL(rc, 0);
            check_group_moved(&w);
        }
        CU_ASSERT(most_open >= 4); /* several slots were left open at once */
    }
}

/* A refusal in the middle of a pipeline is the refused slot's: the run stops with its
 * words, its neighbours (answered OK in the same pipeline) left open, and a run after
 * the refusal is gone finishes them all. */
static void test_refusal_mid_pipeline(void)
{
    static model_t w;
    slotmove_job_t job;
    group_model(&w, &job);
    w.refuse_slot = 4;
    slotmove_io_t io = {m_command, m_pipeline, m_now, &w, m_tick, &w, NULL};
    slotmove_progress_t pr;
    char err[256];
    CU_ASSERT_EQUAL(slotmove_run(&job, &io, NULL, &pr, err, sizeof(err)), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "slot 4: SETSLOT IMPORTING on the target: ERR the model refuses this slot"));
    CU_ASSERT_TRUE(pr.failed);
    CU_ASSERT_EQUAL(pr.slots_done, 0);
    for (int s = 2; s <= 6; s++) { /* IMPORTING on the target at most; the source owns every slot */
        CU_ASSERT_EQUAL(w.n[0].owner[s], 0);
        CU_ASSERT_EQUAL(w.n[1].importing[s], s == 4 ? -1 : 0);
    }
    w.refuse_slot = -1;
    CU_ASSERT_EQUAL(slotmove_run(&job, &io, NULL, &pr, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(pr.slots_done, 5);
    check_group_moved(&w);
}

/* PIPELINES: a batch's MIGRATEs go in pipelines of at most pipeline_bytes (the model's
 * keys are 40 bytes each) and pipeline_migrates, at least one MIGRATE each; one slot's
 * MIGRATE is at most pipeline_bytes too (at least one key), its other keys in the next
 * batch. Slots 2-6 with 4 keys each (160 bytes a slot), one batch of 10000 bytes. */
static void test_pipelines(void)
{
    static const struct {
        const char *what;
        int64_t pipeline_bytes;
        int pipeline_migrates;
        int mig_pipelines, most_migrates, most_keys, migrates;
    } rows[] = {
        {"the defaults: four MIGRATEs a pipeline", 0, 0, 2, 4, 16, 5},
        {"1 MiB and 64 MIGRATEs (before PIPELINES): the batch in one pipeline", 1 << 20, 64, 1, 5, 20, 5},
        {"320 bytes: two slots a pipeline", 320, 0, 3, 2, 8, 5},
        {"200 bytes: one slot a pipeline", 200, 0, 5, 1, 4, 5},
        {"100 bytes: two keys a MIGRATE, one a pipeline", 100, 0, 10, 1, 2, 10},
        {"20 bytes: less than a key, one key a MIGRATE", 20, 0, 20, 1, 1, 20},
        {"two MIGRATEs a pipeline", 0, 2, 3, 2, 8, 5},
        {"one MIGRATE a pipeline", 0, 1, 5, 1, 4, 5},
        {"both bounds: the tighter one", 480, 2, 3, 2, 8, 5},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        static model_t w;
        model_init(&w, 0);
        static const char *const prefix[] = {"", "", "s2", "s3", "s4", "s5", "s6"};
        for (int s = 2; s <= 6; s++)
            add_keys(&w, s, prefix[s], 4);
        slotmove_job_t job;
        job_of(&w, &job, 2, 6, 10000);
        job.pipeline_bytes = rows[i].pipeline_bytes;
        job.pipeline_migrates = rows[i].pipeline_migrates;
        slotmove_io_t io = {m_command, m_pipeline, m_now, &w, m_tick, &w, NULL};
        slotmove_progress_t pr;
        char err[256];
        CU_ASSERT_EQUAL(slotmove_run(&job, &io, NULL, &pr, err, sizeof(err)), 0);
        if (w.mig_pipelines != rows[i].mig_pipelines || w.most_migrates != rows[i].most_migrates ||
            w.most_keys != rows[i].most_keys || w.migrates != rows[i].migrates)
            printf("\n  %s: %d pipelines of MIGRATEs, at most %d MIGRATEs and %d keys, %d MIGRATEs\n", rows[i].what,
                   w.mig_pipelines, w.most_migrates, w.most_keys, w.migrates);
        CU_ASSERT_EQUAL(w.mig_pipelines, rows[i].mig_pipelines);
        CU_ASSERT_EQUAL(pr.migrate_rounds, rows[i].mig_pipelines);
        CU_ASSERT_EQUAL(w.most_migrates, rows[i].most_migrates);
        CU_ASSERT_EQUAL(w.most_keys, rows[i].most_keys);
        CU_ASSERT_EQUAL(w.migrates, rows[i].migrates);
        CU_ASSERT_EQUAL(pr.slots_done, 5);
        CU_ASSERT_EQUAL(pr.keys, 20);
        CU_ASSERT_EQUAL(w.n[0].nkv, 0);
        CU_ASSERT_EQUAL(w.n[1].nkv, 20);
    }
}

/* LISTING: GETKEYSINSLOT's count from the bytes a key was seen to take (a table). */
static void test_list_count(void)
{
    static const struct {
        int64_t batch, bytes_seen, keys_seen;
        size_t count;
    } rows[] = {
        {1 << 20, 0, 0, SLOTMOVE_FIRST_KEYS}, /* no size known yet: start small */
        {400, 0, 0, SLOTMOVE_FIRST_KEYS},
        {400, 400, 10, 10},                   /* 40 bytes a key: the 10 a batch takes */
        {410, 400, 10, 10},                   /* (the keys that fit, not one more) */
        {1 << 20, 1080 * 16, 16, 970},        /* 1 KiB values, 1 MiB */
        {65536, 1080 * 16, 16, 60},
        {1 << 20, 1024 * 100, 100, SLOTMOVE_MAX_KEYS}, /* exactly 1024: at most SLOTMOVE_MAX_KEYS */
        {1 << 20, 800, 100, SLOTMOVE_MAX_KEYS},        /* 8 bytes a key */
        {1 << 20, 0, 5, SLOTMOVE_MAX_KEYS},            /* keys gone since (nil: 0 bytes) */
        {100, 1000, 1, 1},                             /* a key larger than the batch: one */
        {INT64_C(1) << 40, 1, 1, SLOTMOVE_MAX_KEYS},   /* no overflow */
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        size_t got = slotmove_list_count(rows[i].batch, rows[i].bytes_seen, rows[i].keys_seen);
        if (got != rows[i].count)
            printf("\n  row %zu: %zu (want %zu)\n", i, got, rows[i].count);
        CU_ASSERT_EQUAL(got, rows[i].count);
    }
}

/* LISTING through the model: slots 2-6 with n keys of key_bytes each, one run: the
 * GETKEYSINSLOT counts asked (the first 16), how many GETKEYSINSLOTs, the most MEMORY
 * USAGEs a pipeline carried; and always: every key sized exactly once, all moved and counted. */
static void test_listing(void)
{
    static const struct {
        const char *what;
        int keys, key_bytes;
        int64_t batch;
        int asked[16], nasked, getkeys, most_sizes;
    } rows[] = {
        {"1 KiB keys, 1 MiB: 16 listed a slot, then none left", 16, 1024, 1 << 20,
         {16, 16, 16, 16, 16, 1000, 1000, 1000, 1000, 1000}, 10, 10, 64},
        {"40-byte keys, 400 bytes: 16 first, then the 10 a batch takes (9 left, then none)", 25, 40, 400,
         {16, 16, 16, 16, 16, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10}, 15, 15, 16},
        {"8-byte keys, 1 MiB: MEMORY USAGE in pipelines of SLOTMOVE_SIZES_ROUND", 100, 8, 1 << 20,
         {16, 16, 16, 16, 16, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000}, 15, 15,
         SLOTMOVE_SIZES_ROUND},
        {"1 KiB keys, 4 KiB: 4 keys a batch, each sized once", 16, 1024, 4096,
         {16, 16, 16, 16, 16, 4, 4, 4, 4, 4}, 10, 10, 16},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        static model_t w;
        model_init(&w, 0);
        w.key_bytes = rows[i].key_bytes;
        static const char *const prefix[] = {"", "", "s2", "s3", "s4", "s5", "s6"};
        for (int s = 2; s <= 6; s++)
            add_keys(&w, s, prefix[s], rows[i].keys);
        slotmove_job_t job;
        job_of(&w, &job, 2, 6, rows[i].batch);
        slotmove_io_t io = {m_command, m_pipeline, m_now, &w, m_tick, &w, NULL};
        slotmove_progress_t pr;
        char err[256];
        CU_ASSERT_EQUAL(slotmove_run(&job, &io, NULL, &pr, err, sizeof(err)), 0);
        int n = 5 * rows[i].keys, ok = w.nasked == rows[i].nasked;
        for (int k = 0; k < w.nasked && ok; k++)
            ok = w.asked[k] == rows[i].asked[k];
        if (!ok || w.getkeys != rows[i].getkeys || w.most_sizes != rows[i].most_sizes) {
            printf("\n  %s: %d GETKEYSINSLOT, at most %d MEMORY USAGE a pipeline, counts", rows[i].what, w.getkeys,
                   w.most_sizes);
            for (int k = 0; k < w.nasked; k++)
                printf(" %d", w.asked[k]);
            printf("\n");
        }
        CU_ASSERT_TRUE(ok);
        CU_ASSERT_EQUAL(w.getkeys, rows[i].getkeys);
        CU_ASSERT_EQUAL(w.most_sizes, rows[i].most_sizes);
        CU_ASSERT_EQUAL(w.sizes, n); /* no key sized twice */
        CU_ASSERT_EQUAL(w.n[1].nkv, n);
        for (int k = 0; k < w.n[1].nkv; k++)
            CU_ASSERT_EQUAL(w.n[1].kv[k].sized, 1);
        CU_ASSERT_EQUAL(w.n[0].nkv, 0);
        CU_ASSERT_EQUAL(pr.keys, n);
        CU_ASSERT_EQUAL(pr.bytes, (int64_t)n * rows[i].key_bytes);
        CU_ASSERT_EQUAL(pr.slots_done, 5);
    }
}

/* A MIGRATE cut off after copying a key: BUSYKEY, then REPLACE; nothing doubled. */
static void test_migrate_cut_off(void)
{
    static model_t w;
    model_init(&w, 25);
    w.cut_migrate = 1; /* the second batch */
    slotmove_job_t job;
    job_of(&w, &job, 3, 3, 400);
    slotmove_io_t io = {m_command, m_pipeline, m_now, &w, m_tick, &w, NULL};
    slotmove_progress_t pr;
    char err[256];
    CU_ASSERT_EQUAL(slotmove_run(&job, &io, NULL, &pr, err, sizeof(err)), -1);
    CU_ASSERT_EQUAL(keys_in(&w.n[0], 3) + keys_in(&w.n[1], 3), 26); /* one key on both sides */
    CU_ASSERT_EQUAL(slotmove_run(&job, &io, NULL, &pr, err, sizeof(err)), 0);
    check_moved(&w, 3, 25);
}

/* The budget stops a run between batches, max_bytes too; the next run finishes. A
 * refusal stops it with Redis's words. */
static void test_budget_and_refusal(void)
{
    static model_t w;
    model_init(&w, 25);
    slotmove_job_t job;
    job_of(&w, &job, 3, 4, 400);
    job.budget_ns = 3500000; /* the model's clock moves 1 ms a look */
    job.group_slots = 1;     /* (GROUPS of one slot: a group's start is a slot's) */
    slotmove_io_t io = {m_command, m_pipeline, m_now, &w, m_tick, &w, NULL};
    slotmove_progress_t pr;
    char err[256];
    /* spent within slot 3: it is finished all the same, and the run stops at slot 4's start */
    int rc = slotmove_run(&job, &io, NULL, &pr, err, sizeof(err));
    CU_ASSERT_EQUAL(rc, 1);
    CU_ASSERT_TRUE(pr.stopped);
    CU_ASSERT_EQUAL(pr.keys, 25);
    CU_ASSERT_EQUAL(pr.slots_done, 1);
    CU_ASSERT_EQUAL(w.n[1].importing[4], -1); /* nothing left open */
    CU_ASSERT_EQUAL(w.n[0].owner[4], 0);
    check_moved(&w, 3, 25);
    /* a slot of many batches: the run stops in it once twice the budget is spent, open */
    model_init(&w, 25);
    job.budget_ns = 1500000;
    rc = slotmove_run(&job, &io, NULL, &pr, err, sizeof(err));
    CU_ASSERT_EQUAL(rc, 1);
    CU_ASSERT_EQUAL(pr.keys, 16); /* 10, then the 6 left of its first listing (LISTING) */
    CU_ASSERT_EQUAL(w.n[0].migrating[3], 1); /* left open, as RESUMING says */
    job.budget_ns = INT64_C(1000000000000);
    CU_ASSERT_EQUAL(slotmove_run(&job, &io, NULL, &pr, err, sizeof(err)), 0);
    check_moved(&w, 3, 25);
    /* the same in one group: stopped in slot 3, slot 4 (no key) is closed all the same */
    model_init(&w, 25);
    job.group_slots = 0;
    job.budget_ns = 1500000;
    rc = slotmove_run(&job, &io, NULL, &pr, err, sizeof(err));
    CU_ASSERT_EQUAL(rc, 1);
    CU_ASSERT_EQUAL(pr.slots_done, 1);
    CU_ASSERT_EQUAL(w.n[0].migrating[3], 1);
    CU_ASSERT_EQUAL(w.n[0].owner[4], 1);
    CU_ASSERT_EQUAL(w.n[1].importing[4], -1);
    job.budget_ns = INT64_C(1000000000000);
    CU_ASSERT_EQUAL(slotmove_run(&job, &io, NULL, &pr, err, sizeof(err)), 0);
    check_moved(&w, 3, 25);
    /* max_bytes: one batch of 400 bytes, then it stops */
    model_init(&w, 25);
    job.max_bytes = 400;
    rc = slotmove_run(&job, &io, NULL, &pr, err, sizeof(err));
    CU_ASSERT_EQUAL(rc, 1);
    CU_ASSERT_EQUAL(pr.bytes, 400);
    CU_ASSERT_EQUAL(pr.keys, 10);
    job.max_bytes = 0;
    CU_ASSERT_EQUAL(slotmove_run(&job, &io, NULL, &pr, err, sizeof(err)), 0);
    check_moved(&w, 3, 25);
    /* a slot the source no longer owns (moved since the plan): skipped, nothing sent for it */
    model_init(&w, 0);
    for (int i = 0; i < NODES; i++)
        w.n[i].owner[6] = 2;
    job_of(&w, &job, 5, 6, 400);
    CU_ASSERT_EQUAL(slotmove_run(&job, &io, NULL, &pr, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(pr.skipped, 1);
    CU_ASSERT_EQUAL(pr.slots_done, 1);
    CU_ASSERT_EQUAL(w.n[1].importing[6], -1);
    CU_ASSERT_EQUAL(w.n[0].owner[6], 2);
    /* a refusal stops the run with Redis's words */
    model_init(&w, 0);
    job_of(&w, &job, 6, 6, 400);
    memset(job.source.id, 'e', CN_ID_LEN);
    CU_ASSERT_EQUAL(slotmove_run(&job, &io, NULL, &pr, err, sizeof(err)), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "I don't know about node"));
    CU_ASSERT_TRUE(pr.failed);
}

/* bytesPerSecond: the run waits between batches until what it moved is due at the rate
 * (a keepalive at least every half second), and stops at a slot's start when the next
 * bytes are due only past the budget. */
static void test_pace(void)
{
    static model_t w;
    model_init(&w, 25); /* 25 keys of 40 bytes in slot 3 */
    slotmove_job_t job;
    job_of(&w, &job, 3, 4, 400); /* 10 keys a batch */
    job.bytes_per_second = 400;
    slotmove_io_t io = {m_command, m_pipeline, m_now, &w, m_tick, &w, m_wait};
    slotmove_progress_t pr;
    char err[256];
    CU_ASSERT_EQUAL(slotmove_run(&job, &io, NULL, &pr, err, sizeof(err)), 0);
    check_moved(&w, 3, 25);
    CU_ASSERT_EQUAL(pr.bytes, 1000);
    /* 1000 bytes at 400/s: the last batch went no earlier than 800 bytes' due time (2 s),
     * and slot 4 began no earlier than 2.5 s */
    CU_ASSERT(w.waited >= INT64_C(2400000000));
    CU_ASSERT(w.now >= INT64_C(2500000000));
    CU_ASSERT(w.ticks >= 5); /* the waits were cut in half seconds, a keepalive each */
    /* without a rate, no wait */
    model_init(&w, 25);
    job.bytes_per_second = 0;
    CU_ASSERT_EQUAL(slotmove_run(&job, &io, NULL, &pr, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(w.waited, 0);
    /* a budget of 1 s at 400 bytes/s: mid-slot a run may take twice the budget, so two
     * batches go (the second at 1 s: 10 keys, then the 6 left of the slot's first listing
     * of SLOTMOVE_FIRST_KEYS, LISTING), then a third would be due at 2.6 s: the run stops
     * in slot 3, left open (resumable), and returns when its 640 bytes are due (1.6 s);
     * slot 4, of the same group and without a key, is closed all the same */
    model_init(&w, 25);
    job.bytes_per_second = 400;
    job.budget_ns = 1000000000;
    CU_ASSERT_EQUAL(slotmove_run(&job, &io, NULL, &pr, err, sizeof(err)), 1);
    CU_ASSERT_TRUE(pr.stopped);
    CU_ASSERT_EQUAL(pr.slots_done, 1);
    CU_ASSERT_EQUAL(w.n[0].owner[4], 1);
    CU_ASSERT_EQUAL(pr.keys, 16);
    CU_ASSERT_EQUAL(w.n[0].migrating[3], 1);
    CU_ASSERT(w.now >= INT64_C(1600000000));
    CU_ASSERT(w.now < INT64_C(2100000000)); /* never waited past twice the budget */
    /* with no way to wait (io.wait NULL), the run stops rather than outrun the rate */
    model_init(&w, 25);
    job.budget_ns = INT64_C(1000000000000);
    io.wait = NULL;
    CU_ASSERT_EQUAL(slotmove_run(&job, &io, NULL, &pr, err, sizeof(err)), 1);
    CU_ASSERT_EQUAL(pr.bytes, 400);
}

/* bytesPerSecond spreads a batch too: each pipeline of its MIGRATEs waits until the
 * bytes before it are due, so a batch is not sent at full speed and then paused for
 * (the burst holds the source and the target at once). */
static void test_pace_pipelines(void)
{
    static model_t w;
    model_init(&w, 0);
    static const char *const prefix[] = {"", "", "s2", "s3", "s4", "s5", "s6"};
    for (int s = 2; s <= 6; s++)
        add_keys(&w, s, prefix[s], 4); /* 4 keys of 40 bytes in each of slots 2 to 6 */
    slotmove_job_t job;
    job_of(&w, &job, 2, 6, 10000); /* one batch takes them all */
    job.pipeline_bytes = 200;      /* one slot's MIGRATE a pipeline: 5 pipelines */
    job.bytes_per_second = 800;    /* 160 bytes due every 200 ms */
    slotmove_io_t io = {m_command, m_pipeline, m_now, &w, m_tick, &w, m_wait};
    slotmove_progress_t pr;
    char err[256];
    CU_ASSERT_EQUAL(slotmove_run(&job, &io, NULL, &pr, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(pr.keys, 20);
    CU_ASSERT_EQUAL(w.n[1].nkv, 20);
    CU_ASSERT_EQUAL(w.mig_pipelines, 5);
    /* the k-th pipeline (k x 160 bytes before it) went no earlier than k x 200 ms after
     * the run's start (the model's clock was at 0 then), not all at once */
    for (int k = 1; k < w.mig_pipelines; k++)
        CU_ASSERT(w.mig_at[k] >= (int64_t)k * 200000000);
    CU_ASSERT(w.mig_at[4] < 900000000); /* and not much later than due (the looks: 1 ms each) */
    CU_ASSERT(w.ticks >= 4);           /* the keepalive went on while it waited */
}

static void test_json(void)
{
    static model_t w;
    model_init(&w, 0);
    slotmove_job_t job, back;
    job_of(&w, &job, 3, 9, 1 << 20);
    job.nranges = 2;
    job.ranges[1] = (cn_range_t){100, 100};
    job.budget_ns = 2000000000;
    job.bytes_per_second = 1 << 20;
    job.wait_replicas = 1;
    job.pipeline_bytes = 65536;
    json_object *o = slotmove_job_to_json(&job);
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_object_get(o, "slots")), "3-9,100");
    char err[256];
    CU_ASSERT_EQUAL(slotmove_job_from_json(o, &back, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(back.nranges, 2);
    CU_ASSERT_EQUAL(back.ranges[1].from, 100);
    CU_ASSERT_STRING_EQUAL(back.target.id, job.target.id);
    CU_ASSERT_STRING_EQUAL(back.others[1].ip, "10.0.0.4");
    CU_ASSERT_EQUAL(back.budget_ns, 2000000000);
    CU_ASSERT_EQUAL(back.bytes_per_second, 1 << 20);
    CU_ASSERT_EQUAL(back.wait_replicas, 1);
    CU_ASSERT_EQUAL(back.pipeline_bytes, 65536);
    json_object_object_add(o, "pipelineBytes", json_object_new_int64(-1));
    CU_ASSERT_EQUAL(slotmove_job_from_json(o, &back, err, sizeof(err)), -1);
    json_object_put(o);
    static const char *const bad[] = {
        "{}",
        "{\"slots\":\"3-2\",\"source\":{},\"target\":{}}",
        "{\"slots\":\"1,x\",\"source\":{},\"target\":{}}",
        "{\"slots\":\"16384\",\"source\":{},\"target\":{}}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_object *b = json_tokener_parse(bad[i]);
        CU_ASSERT_EQUAL(slotmove_job_from_json(b, &back, err, sizeof(err)), -1);
        json_object_put(b);
    }
}

/* The job run over the model without tick nor wait. */
static int run_plain(model_t *w, const slotmove_job_t *job, slotmove_progress_t *pr, char *err, size_t errlen)
{
    slotmove_io_t io = {m_command, m_pipeline, m_now, w, NULL, NULL, NULL};
    err[0] = '\0';
    return slotmove_run(job, &io, NULL, pr, err, errlen);
}

/* What a run that confirms its keys (REPLICATED) must give: its result, how often it
 * asked (INFO replication, or the replica's CLUSTER NODES), the WAITs it sent, a part of
 * its words (NULL: any). */
typedef struct {
    int rc, asked, waits;
    const char *err;
} confirm_want_t;

/* Runs job on w and checks it against want, row i (what) of a table whose count of asking
 * is *asked (named asked_what in the message): the slot is moved whatever the replica
 * says, keys keys with it. */
static void check_confirm(model_t *w, const slotmove_job_t *job, const int *asked, const char *asked_what, size_t i,
                          const char *what, const confirm_want_t *want, int keys)
{
    slotmove_progress_t pr;
    char err[256];
    int rc = run_plain(w, job, &pr, err, sizeof(err));
    if (rc != want->rc || *asked != want->asked || w->waits != want->waits)
        fprintf(stderr, "\n  row %zu (%s): rc %d, %d %s, %d WAIT: %s", i, what, rc, *asked, asked_what, w->waits,
                err);
    CU_ASSERT_EQUAL(rc, want->rc);
    CU_ASSERT_EQUAL(*asked, want->asked);
    CU_ASSERT_EQUAL(w->waits, want->waits);
    CU_ASSERT_EQUAL(pr.failed, want->rc < 0);
    CU_ASSERT(!want->err || strstr(err, want->err));
    check_moved(w, 3, keys);
}

/* REPLICATED: a run that moved keys ends when the target's replica acknowledged them;
 * each row a replica's state and when it acknowledges, the run's end. */
static void test_replicated(void)
{
    static const struct {
        const char *what;
        int keys, wait_replicas;
        const char *state; /* NULL: no replica line */
        int ack_after, info_fails;
        confirm_want_t want; /* asked: the INFOs sent */
    } rows[] = {
        {"acknowledged at once: one INFO, no WAIT", 5, 1, "online", 0, 0, {0, 1, 0, NULL}},
        {"acknowledged once asked (Redis sends GETACK when a WAIT blocks)", 5, 1, "online", 1, 0, {0, 2, 1, NULL}},
        {"acknowledged at the third WAIT", 5, 1, "online", 3, 0, {0, 4, 3, NULL}},
        {"a replica still synchronising never counts", 5, 1, "wait_bgsave", 1, 0,
         {-1, 201, 200, "did not acknowledge the moved keys: 0 of 1"}},
        {"no replica at all", 5, 1, NULL, 0, 0, {-1, 201, 200, "0 of 1"}},
        {"a replica that never acknowledges: failed after SLOTMOVE_CONFIRM_NS", 5, 1, "online", -1, 0,
         {-1, 201, 200, "within 2000 ms"}},
        {"the target silent: failed with its words", 5, 1, "online", 0, 1,
         {-1, 1, 0, "INFO replication on the target"}},
        {"wait_replicas 0: nothing confirmed", 5, 0, NULL, 0, 0, {0, 0, 0, NULL}},
        {"no key moved: nothing to confirm", 0, 1, NULL, 0, 0, {0, 0, 0, NULL}},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        static model_t w;
        model_init(&w, rows[i].keys);
        w.state = rows[i].state;
        w.ack_after = rows[i].ack_after;
        w.info_fails = rows[i].info_fails;
        slotmove_job_t job;
        job_of(&w, &job, 3, 3, 1 << 20);
        job.wait_replicas = rows[i].wait_replicas;
        check_confirm(&w, &job, &w.infos, "INFO", i, rows[i].what, &rows[i].want, rows[i].keys);
    }
}

/* REPLICATED with the target's replica in the job: the run also waits until the
 * replica's own CLUSTER NODES credits the target with the slots it closed (finding 9),
 * keys moved or not. */
static void test_replica_view(void)
{
    static const struct {
        const char *what;
        int keys, view_after;
        confirm_want_t want; /* asked: the replica's CLUSTER NODES looked at */
    } rows[] = {
        {"the replica heard at once: one look", 5, 1, {0, 1, 0, NULL}},
        {"it hears after two WAITs: three looks", 5, 3, {0, 3, 2, NULL}},
        {"no key moved: the slot still waits for the view", 0, 2, {0, 2, 1, NULL}},
        {"it never hears: failed after SLOTMOVE_CONFIRM_NS", 5, -1,
         {-1, 201, 200, "did not credit it with the moved slots: 0 of 1"}},
        {"no replica in the job: only the keys' acknowledgement", 5, 0, {0, 0, 0, NULL}},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        static model_t w;
        model_init(&w, rows[i].keys);
        w.state = "online";
        w.view_after = rows[i].view_after;
        slotmove_job_t job;
        job_of(&w, &job, 3, 3, 1 << 20);
        job.wait_replicas = 1;
        if (rows[i].view_after) {
            job.nreplicas = 1;
            job.replicas[0] = job.target;
            snprintf(job.replicas[0].ip, sizeof(job.replicas[0].ip), "10.0.0.9");
            memset(job.replicas[0].id, '9', CN_ID_LEN);
        }
        check_confirm(&w, &job, &w.views, "looks", i, rows[i].what, &rows[i].want, rows[i].keys);
    }
    /* the job's replicas survive JSON */
    static model_t w;
    model_init(&w, 0);
    slotmove_job_t job, back;
    job_of(&w, &job, 3, 3, 1 << 20);
    job.nreplicas = 1;
    job.replicas[0] = job.target;
    json_object *b = slotmove_job_to_json(&job);
    char err[256];
    CU_ASSERT_EQUAL(slotmove_job_from_json(b, &back, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(back.nreplicas, 1);
    CU_ASSERT_STRING_EQUAL(back.replicas[0].id, job.target.id);
    json_object_put(b);
    CU_ASSERT_PTR_EQUAL(slotmove_node(&job, SLOTMOVE_TO_REPLICA(0)), &job.replicas[0]);
}

/* slotmove_acked: the replica lines online at an offset at least the one asked. */
static void test_acked(void)
{
    static const struct {
        const char *info;
        int64_t offset;
        int acked;
    } rows[] = {
        {"role:master\r\nconnected_slaves:0\r\nmaster_repl_offset:10\r\n", 10, 0},
        {"slave0:ip=10.0.0.2,port=6379,state=online,offset=10,lag=0\r\n", 10, 1},
        {"slave0:ip=10.0.0.2,port=6379,state=online,offset=9,lag=0\r\n", 10, 0},
        {"slave0:ip=10.0.0.2,port=6379,state=wait_bgsave,offset=10,lag=0\r\n", 10, 0},
        {"slave0:ip=10.0.0.2,port=6379,state=online,offset=12,lag=1\r\n"
         "slave1:ip=10.0.0.3,port=6379,state=online,offset=11,lag=0\r\n",
         11, 2},
        {"slave0:ip=10.0.0.2,port=6379,state=online,offset=12,lag=1\nslave1:ip=10.0.0.3,port=6379,state=send_bulk,"
         "offset=0,lag=0\n",
         12, 1},
        {"slaves_x:state=online,offset=99\r\n", 1, 0},
        {"", 0, 0},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        CU_ASSERT_EQUAL(slotmove_acked(rows[i].info, rows[i].offset), rows[i].acked);
}

static const cu_entry_t tests[] = {
    CU_SUITE("slot moves"),
    {"the machine as a table", test_table},
    {"three slots with 25 keys moved whole", test_moves_a_slot},
    {"killed after any command, run again: moved, nothing lost", test_every_crash_point},
    {"a MIGRATE cut off after a copy: BUSYKEY, then REPLACE", test_migrate_cut_off},
    {"LISTING: GETKEYSINSLOT's count from the bytes a key takes (a table)", test_list_count},
    {"LISTING: keys listed per round, each sized once, sizes pipelines capped (a table)", test_listing},
    {"a group killed after any command, run again: its open slots finished", test_group_crash_points},
    {"a refusal mid-pipeline is its slot's; the run again finishes all", test_refusal_mid_pipeline},
    {"a batch's MIGRATEs split into pipelines by bytes and count (a table)", test_pipelines},
    {"budget and max_bytes stop a run; a refusal stops it with Redis's words", test_budget_and_refusal},
    {"bytesPerSecond paces a run between batches", test_pace},
    {"bytesPerSecond spreads a batch over its pipelines", test_pace_pipelines},
    {"the job as a plan action's body", test_json},
    {"a run that moved keys confirms the target's replicas hold them (a table)", test_replicated},
    {"and that the target's replica credits it with the slots (a table)", test_replica_view},
    {"replica lines acknowledged at an offset (a table)", test_acked},
};
CU_MAIN(tests)
