/* bench_slotmove: the slot move's own throughput, without Kubernetes (bench/README.md,
 * "Slot moves without Kubernetes"). Four real redis-server processes in cluster mode on
 * 127.0.0.1 (three masters holding every slot, a fourth empty), BYTES of 1 KiB values
 * written into the three, then a quarter of the slots moved into the fourth: once by
 * slotmove_run_sync (what workerd runs for a PLAN_SLOT_MOVE: each source's highest slots,
 * as the plan picks them), once from the same starting point by `redis-cli --cluster
 * rebalance --cluster-use-empty-masters`. During each move a SET writer thread per source
 * master (a key of a slot neither side moves, a SET every millisecond) times every answer:
 * what a client of the source waits for while slots leave it. Prints seconds, slots/s,
 * keys/s, MB/s (the values' bytes), the writers' waits (longest, 99th and 99.9th
 * percentiles, how many over 10 and 50 ms, of how many SETs: bench/latency_hist.h), (ours)
 * the commands sent per slot, and the sources' MIGRATEs: how many,
 * Redis's ms in each (INFO commandstats), and the mean time a pipeline of them held its
 * source (ours: progress.migrate_rounds; redis-cli sends one at a time). Every
 * redis-server started is stopped by its PID.
 *
 *   bench_slotmove [--bytes N] [--value N] [--batch-bytes N] [--pipeline-bytes N]
 *                  [--pipeline-migrates N] [--only ours,cli,idle] [--runs N] [--cli-pipeline N]
 *                  [--tmp DIR] [--bytes-per-second N]
 *
 * --only: the trials of a round, in the order idle, ours, cli (default ours,cli); idle: the
 * writers alone for 3 s on the filled cluster, nothing moving (the machine's own floor).
 * --cli-pipeline: redis-cli's --cluster-pipeline (keys a MIGRATE; its default 10).
 * --tmp: where the servers' directory goes (default /tmp; /dev/shm, a tmpfs, takes the
 * disk out of the nodes.conf writes Redis makes after each CLUSTER SETSLOT).
 * --bytes-per-second: ours paced (spec.cluster.migration.bytesPerSecond; 0 none).
 * After each trial a note row lists the sources' commands slower than 1 ms (SLOWLOG).
 */
#include "bench_util.h"
#include "clock.h"
#include "latency_hist.h"
#include "redis_servers.h"
#include "slotmove.h"

#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BN 4 /* nodes: three masters and the empty one */
#define IDLE_MS 3000 /* the idle trial: the writers alone, nothing moves */

enum { SIDE_CLI, SIDE_OURS, SIDE_IDLE }; /* a trial's mover */
#define WRITER_PERIOD_NS (INT64_C(1000000)) /* each writer thread: a SET every millisecond */
#define EMPTY_CELLS " | | | | | | | | | | |"      /* a note row's other 11 columns */

/* One SET writer thread: a key of a slot that stays on master `node`, set every
 * WRITER_PERIOD_NS on its own connection, each answer timed. */
typedef struct {
    int port;
    char key[32];
    atomic_int *stop;
    long long sets, failed;
    lh_t waits; /* each SET's wait for its answer, us */
    pthread_t th;
} writer_t;

typedef struct {
    int64_t bytes, value, batch_bytes, pipeline_bytes, bytes_per_second;
    int ours, cli, idle, runs, pipeline_migrates, cli_pipeline;
    writer_t writer[BN - 1];
    atomic_int writers_stop;
    char dir[256];
    server_t srv[BN];
    char id[BN][CN_ID_LEN + 1];
    long long keys;
} bench_t;

static redisContext *bconn(const bench_t *b, int i)
{
    redisContext *c = redisConnect("127.0.0.1", b->srv[i].port);
    struct timeval tv = {30, 0};
    if (c && !c->err && redisSetTimeout(c, tv) == REDIS_OK)
        return c;
    redisFree(c);
    return NULL;
}

/* cmd on node i: its reply (the caller frees), NULL when none. */
static redisReply *bcmd(const bench_t *b, int i, const char *cmd)
{
    redisContext *c = bconn(b, i);
    redisReply *r = c ? redisCommand(c, cmd) : NULL;
    redisFree(c);
    return r;
}

/* A command's text answer into out ("" when none). */
static void bask(const bench_t *b, int i, const char *cmd, char *out, size_t len)
{
    redisReply *r = bcmd(b, i, cmd);
    snprintf(out, len, "%s", r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) ? r->str : "");
    freeReplyObject(r);
}

static void stop_all(bench_t *b)
{
    for (int i = 0; i < BN; i++)
        server_stop(&b->srv[i]);
}

/* 1 when every node knows the four, says cluster_state:ok and sees no open slot. */
static int settled(const bench_t *b)
{
    static char text[1 << 16];
    for (int i = 0; i < BN; i++) {
        bask(b, i, "CLUSTER INFO", text, sizeof(text));
        if (!strstr(text, "cluster_state:ok"))
            return 0;
        bask(b, i, "CLUSTER NODES", text, sizeof(text));
        int lines = 0;
        for (const char *p = text; *p; p++)
            lines += *p == '\n';
        if (lines != BN || strstr(text, "->-") || strstr(text, "-<-") || strstr(text, "handshake"))
            return 0;
    }
    return 1;
}

/* 1 when 127.0.0.1:port can be bound now. */
static int bindable(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int ok = fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof(a));
    if (fd >= 0)
        close(fd);
    return ok;
}

/* A port for node i below the ephemeral range (32768), its cluster bus (+ 10000) too:
 * from 12000 up, spread by the process id so that two benches seldom meet. */
static int low_port(int i)
{
    for (int k = 0; k < 10000; k++) {
        int port = 12000 + (int)(((unsigned)getpid() * 37u + (unsigned)(i * 101 + k)) % 10000u);
        if (bindable(port) && bindable(port + 10000))
            return port;
    }
    return free_port();
}

/* Four fresh nodes, slots 0-16383 over the first three, met, settled. 0 or -1. */
static int start_cluster(bench_t *b)
{
    char cmd[128], conf[300];
    for (int i = 0; i < BN; i++) {
        snprintf(conf, sizeof(conf), "%s/nodes-%d.conf", b->dir, i);
        unlink(conf);
        const char *extra[] = {"--cluster-enabled", "yes", "--cluster-config-file", conf,
                               "--cluster-node-timeout", "5000", "--dir", b->dir, NULL};
        int port = low_port(i);
        if (server_start(&b->srv[i], port, extra)) {
            fprintf(stderr, "bench_slotmove: redis-server %d did not start\n", i);
            return -1;
        }
        bask(b, i, "CLUSTER MYID", b->id[i], sizeof(b->id[i]));
    }
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof(cmd), "CLUSTER ADDSLOTSRANGE %d %d", i * 16384 / 3, (i + 1) * 16384 / 3 - 1);
        bask(b, i, cmd, conf, sizeof(conf));
        snprintf(cmd, sizeof(cmd), "CLUSTER SET-CONFIG-EPOCH %d", i + 1);
        bask(b, i, cmd, conf, sizeof(conf));
    }
    for (int i = 1; i < BN; i++) {
        snprintf(cmd, sizeof(cmd), "CLUSTER MEET 127.0.0.1 %d", b->srv[0].port);
        bask(b, i, cmd, conf, sizeof(conf));
    }
    for (int waited = 0; waited < 30000; waited += 100, nap_ms(100))
        if (settled(b))
            return 0;
    fprintf(stderr, "bench_slotmove: the cluster did not settle in 30 s\n");
    return -1;
}

/* b->bytes of b->value-byte values into the three masters (each key to its slot's). */
static int fill(bench_t *b)
{
    char *val = malloc((size_t)b->value);
    redisContext *c[3] = {bconn(b, 0), bconn(b, 1), bconn(b, 2)};
    int pending[3] = {0}, rc = val && c[0] && c[1] && c[2] ? 0 : -1;
    if (val)
        memset(val, 'v', (size_t)b->value);
    b->keys = b->bytes / b->value;
    for (long long k = 0; k < b->keys && !rc; k++) {
        char key[32];
        snprintf(key, sizeof(key), "key:%lld", k);
        int n = bench_key_slot(key) * 3 / 16384;
        while (n > 0 && bench_key_slot(key) < n * 16384 / 3)
            n--;
        while (n < 2 && bench_key_slot(key) >= (n + 1) * 16384 / 3)
            n++;
        redisAppendCommand(c[n], "SET %s %b", key, val, (size_t)b->value);
        if (++pending[n] < 500 && k + 1 < b->keys)
            continue;
        for (int i = 0; i < 3; i++)
            for (; pending[i] > 0 && !rc; pending[i]--) {
                void *r = NULL;
                rc = redisGetReply(c[i], &r) == REDIS_OK ? 0 : -1;
                freeReplyObject(r);
            }
    }
    for (int i = 0; i < 3; i++)
        if (c[i])
            redisFree(c[i]);
    free(val);
    return rc;
}

/* A writer thread: SET its key every WRITER_PERIOD_NS until told to stop, the longest
 * wait for an answer kept (a refusal or a lost connection counts as failed: the key's
 * slot stays on its master, so none is expected). */
static void *writer_main(void *arg)
{
    writer_t *w = arg;
    redisContext *c = redisConnect("127.0.0.1", w->port);
    struct timeval tv = {30, 0};
    if (!c || c->err || redisSetTimeout(c, tv) != REDIS_OK) {
        w->failed++;
        redisFree(c);
        return NULL;
    }
    while (!atomic_load(w->stop)) {
        int64_t t0 = clock_mono_ns();
        redisReply *r = redisCommand(c, "SET %s %lld", w->key, w->sets);
        int64_t waited = clock_mono_ns() - t0;
        int ok = r && r->type == REDIS_REPLY_STATUS;
        freeReplyObject(r);
        if (!ok) {
            w->failed++;
            break;
        }
        w->sets++;
        lh_add(&w->waits, waited / 1000);
        if (waited < WRITER_PERIOD_NS) {
            struct timespec ts = {0, (long)(WRITER_PERIOD_NS - waited)};
            nanosleep(&ts, NULL);
        }
    }
    redisFree(c);
    return NULL;
}

/* One writer per source master, each on a key of a slot that stays there (in the middle
 * of its master's range: redis-cli moves the lowest slots, ours the highest). Returns 0 or
 * -1 (none left running). */
static int writers_start(bench_t *b)
{
    atomic_store(&b->writers_stop, 0);
    for (int i = 0; i < BN - 1; i++) {
        writer_t *w = &b->writer[i];
        memset(w, 0, sizeof(*w));
        w->port = b->srv[i].port;
        w->stop = &b->writers_stop;
        int k = 0, low = i * 16384 / 3 + 2000;
        do
            snprintf(w->key, sizeof(w->key), "writer:%d", k++);
        while (bench_key_slot(w->key) < low || bench_key_slot(w->key) >= low + 1000);
        if (pthread_create(&w->th, NULL, writer_main, w)) {
            atomic_store(&b->writers_stop, 1);
            for (int j = 0; j < i; j++)
                pthread_join(b->writer[j].th, NULL);
            return -1;
        }
    }
    return 0;
}

/* Stops the writers: every wait of all three into *all (bench/latency_hist.h); -1 when
 * one failed, else 0. */
static int writers_stop(bench_t *b, lh_t *all)
{
    long long failed = 0;
    memset(all, 0, sizeof(*all));
    atomic_store(&b->writers_stop, 1);
    for (int i = 0; i < BN - 1; i++) {
        pthread_join(b->writer[i].th, NULL);
        failed += b->writer[i].failed;
        lh_merge(all, &b->writer[i].waits);
    }
    return failed ? -1 : 0;
}

static void node_of(const bench_t *b, int i, slotmove_node_t *n)
{
    memset(n, 0, sizeof(*n));
    snprintf(n->pod, sizeof(n->pod), "n%d", i);
    snprintf(n->ip, sizeof(n->ip), "127.0.0.1");
    n->port = b->srv[i].port;
    snprintf(n->id, sizeof(n->id), "%s", b->id[i]);
}

/* Ours: each master's highest slots above the share (16384 / 4) to node 3, one job each,
 * run again while a run stops at its budget (as the plan would). Returns 0 or -1. */
static int move_ours(const bench_t *b, slotmove_progress_t *sum)
{
    static slotmove_job_t job;
    memset(sum, 0, sizeof(*sum));
    for (int s = 0; s < 3; s++) {
        int from = s * 16384 / 3, to = (s + 1) * 16384 / 3 - 1, give = to - from + 1 - 16384 / 4;
        memset(&job, 0, sizeof(job));
        node_of(b, s, &job.source);
        node_of(b, 3, &job.target);
        for (int o = 0; o < 3; o++)
            if (o != s)
                node_of(b, o, &job.others[job.nothers++]);
        job.nranges = 1;
        job.ranges[0] = (cn_range_t){to - give + 1, to};
        job.batch_bytes = b->batch_bytes;
        job.pipeline_bytes = b->pipeline_bytes;
        job.pipeline_migrates = b->pipeline_migrates;
        job.bytes_per_second = b->bytes_per_second;
        job.budget_ns = SLOTMOVE_DEFAULT_BUDGET_NS;
        int rc = 1;
        while (rc == 1) {
            slotmove_progress_t pr;
            char err[512];
            rc = slotmove_run_sync(&job, NULL, NULL, &pr, err, sizeof(err));
            if (rc < 0) {
                fprintf(stderr, "bench_slotmove: slotmove_run_sync: %s\n", err);
                return -1;
            }
            sum->slots_done += pr.slots_done;
            sum->keys += pr.keys;
            sum->bytes += pr.bytes;
            sum->commands += pr.commands;
            sum->round_trips += pr.round_trips;
            sum->migrate_rounds += pr.migrate_rounds;
        }
    }
    return 0;
}

static int move_cli(const bench_t *b)
{
    char cmd[512], pipe[48] = "";
    if (b->cli_pipeline > 0) /* else redis-cli's default, 10 keys a MIGRATE */
        snprintf(pipe, sizeof(pipe), " --cluster-pipeline %d", b->cli_pipeline);
    snprintf(cmd, sizeof(cmd),
             "redis-cli --cluster rebalance 127.0.0.1:%d --cluster-use-empty-masters%s >%s/cli.log 2>&1",
             b->srv[0].port, pipe, b->dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Keys on node 3 (DBSIZE). */
static long long moved_keys(const bench_t *b)
{
    redisReply *r = bcmd(b, 3, "DBSIZE");
    long long n = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    freeReplyObject(r);
    return n;
}

/* The sources' MIGRATEs (INFO commandstats of the three masters, summed): calls, and the
 * microseconds Redis spent in them (each blocks its source until the target restored
 * its keys). */
static void migrate_stats(const bench_t *b, long long *calls, long long *usec)
{
    static char text[1 << 16];
    *calls = *usec = 0;
    for (int i = 0; i < BN - 1; i++) {
        bask(b, i, "INFO commandstats", text, sizeof(text));
        const char *p = strstr(text, "cmdstat_migrate:calls=");
        const char *u = p ? strstr(p, ",usec=") : NULL;
        if (!p || !u)
            continue;
        *calls += strtoll(p + strlen("cmdstat_migrate:calls="), NULL, 10);
        *usec += strtoll(u + strlen(",usec="), NULL, 10);
    }
}

/* The sources' slow log emptied and set to keep every command over SLOW_US: what held a
 * source while a writer waited, apart from the event loop's own work (the nodes.conf
 * save and fsync after a CLUSTER SETSLOT, in beforeSleep, is in no command's time). */
#define SLOW_US 1000
static void slowlog_arm(const bench_t *b)
{
    char out[64], cmd[96];
    snprintf(cmd, sizeof(cmd), "CONFIG SET slowlog-log-slower-than %d", SLOW_US);
    for (int i = 0; i < BN - 1; i++) {
        bask(b, i, cmd, out, sizeof(out));
        bask(b, i, "CONFIG SET slowlog-max-len 4096", out, sizeof(out));
        bask(b, i, "SLOWLOG RESET", out, sizeof(out));
    }
}

typedef struct {
    char name[40]; /* the command and, for CLUSTER, its subcommand */
    long long n, usec, max_usec;
} slow_t;

/* One slow log entry ([id, time, usec, [args..], ..]) into the table of names. */
static void slow_add(slow_t *t, int *n, int cap, const redisReply *e)
{
    if (e->type != REDIS_REPLY_ARRAY || e->elements < 4 || e->element[3]->type != REDIS_REPLY_ARRAY ||
        !e->element[3]->elements)
        return;
    const redisReply *args = e->element[3];
    char name[40];
    int sub = args->elements > 1 && !strcasecmp(args->element[0]->str, "cluster");
    snprintf(name, sizeof(name), "%s%s%s", args->element[0]->str, sub ? " " : "", sub ? args->element[1]->str : "");
    int k = 0;
    while (k < *n && strcasecmp(t[k].name, name))
        k++;
    if (k == *n && *n == cap)
        return;
    if (k == *n)
        snprintf(t[(*n)++].name, sizeof(t[k].name), "%s", name);
    long long us = e->element[2]->integer;
    t[k].n++;
    t[k].usec += us;
    t[k].max_usec = us > t[k].max_usec ? us : t[k].max_usec;
}

/* A note row: the sources' commands over SLOW_US by name, with their count, total and
 * longest ms. */
static void slowlog_report(const bench_t *b)
{
    slow_t t[16];
    int n = 0;
    memset(t, 0, sizeof(t));
    for (int i = 0; i < BN - 1; i++) {
        redisReply *r = bcmd(b, i, "SLOWLOG GET 4096");
        for (size_t j = 0; r && r->type == REDIS_REPLY_ARRAY && j < r->elements; j++)
            slow_add(t, &n, 16, r->element[j]);
        freeReplyObject(r);
    }
    printf("|   commands over %d ms on the sources:", SLOW_US / 1000);
    for (int k = 0; k < n; k++)
        printf("%s %s %lld (%.1f ms, longest %.1f)", k ? "," : "", t[k].name, t[k].n, (double)t[k].usec / 1e3,
               (double)t[k].max_usec / 1e3);
    printf("%s |%s\n", n ? "" : " none", EMPTY_CELLS);
}

/* A trial's lines of the table: time, rates, the writers' waits (ms: longest, p99, p99.9;
 * how many over 10 and 50 ms, of how many); ours: its round trips; both: the sources'
 * MIGRATEs and the pipelines they went in. */
static void report(const bench_t *b, int side, double sec, const slotmove_progress_t *pr, const lh_t *w)
{
    static const char *const names[] = {"redis-cli --cluster rebalance", "slotmove_run_sync (workerd's)",
                                        "idle: the writers alone"};
    long long keys = moved_keys(b), mcalls = 0, musec = 0;
    migrate_stats(b, &mcalls, &musec);
    int ours = side == SIDE_OURS, slots = ours ? pr->slots_done : side == SIDE_CLI ? 16384 / 4 : 0;
    printf("| %-34s | %7.2f | %7.0f | %9.0f | %6.1f | %7.1f | %5.2f | %6.2f | %4lld | %4lld | %6lld | %9lld |\n",
           names[side], sec, slots / sec,
           (double)keys / sec, (double)keys * (double)b->value / 1e6 / sec, (double)w->max_us / 1e3,
           (double)lh_quantile(w, 0.99) / 1e3, (double)lh_quantile(w, 0.999) / 1e3, w->over[0], w->over[1], w->n, keys);
    if (ours)
        printf("|   %d commands in %d round trips: %.2f a slot; %.2f commands a key |%s\n", pr->commands,
               pr->round_trips, (double)pr->round_trips / (slots ? slots : 1),
               (double)pr->commands / (double)(keys ? keys : 1), EMPTY_CELLS);
    int rounds = ours ? pr->migrate_rounds : (int)mcalls; /* (redis-cli: one MIGRATE at a time) */
    printf("|   %lld MIGRATEs, %.2f ms each on its source; %d pipelines of them, %.2f ms each |%s\n", mcalls,
           mcalls ? (double)musec / 1e3 / (double)mcalls : 0.0, rounds, rounds ? (double)musec / 1e3 / rounds : 0.0,
           EMPTY_CELLS);
    slowlog_report(b);
    fflush(stdout);
}

/* One trial of one side: fresh cluster, filled, moved under the writers, timed, checked
 * settled (every node agrees, nothing open). Returns 0 or -1. */
/* The move of a trial's side (the idle one: IDLE_MS of nothing). 0 or -1. */
static int move(const bench_t *b, int side, slotmove_progress_t *pr)
{
    if (side == SIDE_OURS)
        return move_ours(b, pr);
    if (side == SIDE_CLI)
        return move_cli(b);
    nap_ms(IDLE_MS);
    return 0;
}

static int trial(bench_t *b, int side)
{
    slotmove_progress_t pr = {0};
    int rc = start_cluster(b) ? -1 : 0;
    if (!rc && fill(b)) {
        fprintf(stderr, "bench_slotmove: writing the keys failed\n");
        rc = -1;
    }
    if (!rc)
        slowlog_arm(b);
    int writing = !rc && !writers_start(b);
    if (!rc && !writing) {
        fprintf(stderr, "bench_slotmove: the writers did not start\n");
        rc = -1;
    }
    nap_ms(rc ? 0 : 200); /* the writers connected and writing */
    int64_t t0 = clock_mono_ns();
    if (!rc && (rc = move(b, side, &pr)))
        fprintf(stderr, "bench_slotmove: the move failed (%s)\n", side == SIDE_OURS ? "slotmove_run_sync" : b->dir);
    double sec = (double)(clock_mono_ns() - t0) / 1e9;
    nap_ms(rc ? 0 : 200);
    static lh_t waits;
    if (writing && writers_stop(b, &waits) && !rc) {
        fprintf(stderr, "bench_slotmove: a writer's SET failed\n");
        rc = -1;
    }
    int ok = 0;
    for (int waited = 0; !rc && !ok && waited < 10000; waited += 100, nap_ms(100))
        ok = settled(b);
    if (!rc && !ok) {
        fprintf(stderr, "bench_slotmove: the cluster did not settle after the move\n");
        rc = -1;
    }
    if (!rc)
        report(b, side, sec, &pr, &waits);
    stop_all(b);
    return rc;
}

int main(int argc, char **argv)
{
    static bench_t b = {.bytes = 64 << 20, .value = 1024, .batch_bytes = SLOTMOVE_DEFAULT_BATCH_BYTES, .runs = 1};
    b.ours = b.cli = 1;
    static const struct option opts[] = {{"bytes", 1, 0, 'b'}, {"value", 1, 0, 'v'}, {"batch-bytes", 1, 0, 'B'},
                                         {"pipeline-bytes", 1, 0, 'P'}, {"pipeline-migrates", 1, 0, 'M'},
                                         {"only", 1, 0, 'o'}, {"runs", 1, 0, 'r'}, {"cli-pipeline", 1, 0, 'c'},
                                         {"tmp", 1, 0, 't'}, {"bytes-per-second", 1, 0, 'S'}, {0, 0, 0, 0}};
    const char *tmp = "/tmp";
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        if (c == 'b')
            b.bytes = strtoll(optarg, NULL, 10);
        else if (c == 'v')
            b.value = strtoll(optarg, NULL, 10);
        else if (c == 'B')
            b.batch_bytes = strtoll(optarg, NULL, 10);
        else if (c == 'P')
            b.pipeline_bytes = strtoll(optarg, NULL, 10);
        else if (c == 'M')
            b.pipeline_migrates = (int)strtol(optarg, NULL, 10);
        else if (c == 'r')
            b.runs = (int)strtol(optarg, NULL, 10);
        else if (c == 'c')
            b.cli_pipeline = (int)strtol(optarg, NULL, 10);
        else if (c == 't')
            tmp = optarg;
        else if (c == 'S')
            b.bytes_per_second = strtoll(optarg, NULL, 10);
        else if (c == 'o') {
            b.ours = strstr(optarg, "ours") != NULL;
            b.cli = strstr(optarg, "cli") != NULL;
            b.idle = strstr(optarg, "idle") != NULL;
        } else
            return 2;
    }
    snprintf(b.dir, sizeof(b.dir), "%s/bench_slotmove.XXXXXX", tmp);
    if (b.value <= 0 || b.bytes < b.value || !mkdtemp(b.dir))
        return 2;
    printf("%lld MiB, %lld keys of %lld bytes, 3 -> 4 masters, batchBytes %lld, pipelineBytes %lld, "
           "MIGRATEs a pipeline %d (0: the defaults)\n\n", (long long)(b.bytes >> 20), (long long)(b.bytes / b.value),
           (long long)b.value, (long long)b.batch_bytes, (long long)b.pipeline_bytes, b.pipeline_migrates);
    printf("| %-34s | seconds | slots/s |    keys/s |   MB/s | longest SET wait (ms) | p99 (ms) | p99.9 (ms) "
           "| SETs > 10 ms | > 50 ms | SETs | keys moved |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n", "");
    int rc = 0;
    for (int r = 0; r < b.runs && !rc; r++)
        rc = (b.idle && trial(&b, SIDE_IDLE)) || (b.ours && trial(&b, SIDE_OURS)) || (b.cli && trial(&b, SIDE_CLI));
    stop_all(&b);
    char rm[300];
    snprintf(rm, sizeof(rm), "rm -rf '%s'", b.dir);
    if (system(rm))
        rc = -1;
    return rc ? 1 : 0;
}
