/* rdc-backup's two Cluster-mode flags (docs/backup.md, "Cluster mode"): take --slots (the
 * RANGES text, the shard master's slots in CLUSTER NODES texts compared with it, and the
 * check against real redis-server processes in cluster mode: a master, a replica of it
 * read through, a node not in cluster mode) and restore --only-pod (the decision, and the
 * first half of the command leaving the data directory alone on another pod). The whole
 * take with --slots against S3 is tests/s3/backup.sh (make backup-check). */
#include "cli.h"
#include "restore.h"
#include "slots.h"
#include "take.h"

#include "cu_table.h"
#include "redis_servers.h"
#include "text_case.h"
#include "tmpdir.h"

#include <CUnit/CUnit.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the RANGES text ---- */

static void test_parse_good(void)
{
    static const text_case_t rows[] = {
        /* --slots, then the set as merged ranges */
        {"0", "0"},
        {"16383", "16383"},
        {"0-5460", "0-5460"},
        {"5461-10922", "5461-10922"},
        {"0-16383", "0-16383"},
        {"0-10,20-30,16383", "0-10,20-30,16383"},
        {"20-30,0-10", "0-10,20-30"}, /* any order */
        {"0-10,11-20", "0-20"},       /* touching ranges: one set */
        {"7-7", "7"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        cn_slots_t s;
        char err[256] = "", text[SLOTS_TEXT_MAX];
        CU_ASSERT_EQUAL(slots_parse(rows[i].in, &s, err, sizeof err), 0);
        slots_text(&s, text, sizeof text);
        if (strcmp(text, rows[i].want) != 0)
            printf("\n  row %zu: \"%s\" -> \"%s\" (%s), want \"%s\"", i, rows[i].in, text, err, rows[i].want);
        CU_ASSERT_STRING_EQUAL(text, rows[i].want);
    }
}

static void test_parse_bad(void)
{
#define NOT_SLOT "\" is not a slot N or a range A-B (A <= B) of slots 0 to 16383"
    static const text_case_t rows[] = {
        {"", "--slots \"\": no slots (a shard's slots: \"0-5460\", \"0-10,20-30\")"},
        {"x", "--slots \"x\": \"x" NOT_SLOT},
        {"16384", "--slots \"16384\": \"16384" NOT_SLOT},
        {"0-16384", "--slots \"0-16384\": \"0-16384" NOT_SLOT},
        {"10-5", "--slots \"10-5\": \"10-5" NOT_SLOT},
        {"0-10,5", "--slots \"0-10,5\": slot 5 is given twice"},
        {"3,3", "--slots \"3,3\": slot 3 is given twice"},
        {"0-10 20-30", "--slots \"0-10 20-30\": \"0-10 20-30" NOT_SLOT},
        {"0,,1", "--slots \"0,,1\": \"" NOT_SLOT},
        {"0,", "--slots \"0,\": \"" NOT_SLOT},
        {",0", "--slots \",0\": \"" NOT_SLOT},
        {"-1", "--slots \"-1\": \"-1" NOT_SLOT},
        {"1-", "--slots \"1-\": \"1-" NOT_SLOT},
        {"1-2-3", "--slots \"1-2-3\": \"1-2-3" NOT_SLOT},
        {"+1", "--slots \"+1\": \"+1" NOT_SLOT},
        {" 0", "--slots \" 0\": \" 0" NOT_SLOT},
        {"007", "--slots \"007\": \"007" NOT_SLOT},
        {"0x10", "--slots \"0x10\": \"0x10" NOT_SLOT},
        {"99999999999999999999", "--slots \"99999999999999999999\": \"99999999999999999999" NOT_SLOT},
    };
#undef NOT_SLOT
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        cn_slots_t s;
        char err[256] = "";
        CU_ASSERT_EQUAL(slots_parse(rows[i].in, &s, err, sizeof err), -1);
        if (strcmp(err, rows[i].want) != 0)
            printf("\n  row %zu: \"%s\", want \"%s\"", i, err, rows[i].want);
        CU_ASSERT_STRING_EQUAL(err, rows[i].want);
    }
}

/* ---- the shard's master in CLUSTER NODES ---- */

#define M1 "1111111111111111111111111111111111111111"
#define M2 "2222222222222222222222222222222222222222"
#define R1 "3333333333333333333333333333333333333333"
#define GONE "4444444444444444444444444444444444444444"
#define LINE_M2 M2 " 10.0.0.8:6379@16379 master - 0 1 2 connected 5461-16383\n"
#define MOVED "the slots moved since the backup was planned; the next backup tries again"

static void test_check_table(void)
{
    static const struct {
        const char *nodes;
        const char *want; /* NULL: the same slots */
    } rows[] = {
        /* the node read from is the master */
        {M1 " 10.0.0.7:6379@16379 myself,master - 0 0 1 connected 0-5460\n" LINE_M2, NULL},
        /* a replica: its master's slots as it sees them */
        {R1 " 10.0.0.9:6379@16379 myself,slave " M1 " 0 0 1 connected\n"
            M1 " 10.0.0.7:6379@16379 master - 0 1 1 connected 0-5460\n" LINE_M2,
         NULL},
        /* the same set in two ranges; open slots are not served slots */
        {M1 " 10.0.0.7:6379@16379 myself,master - 0 0 1 connected 0-100 101-5460 [5461-<-" M2 "]\n" LINE_M2, NULL},
        {M1 " 10.0.0.7:6379@16379 myself,master - 0 0 1 connected 0-5000\n" LINE_M2,
         "the shard's master 10.0.0.7:6379 serves 0-5000, not 0-5460 (--slots): " MOVED},
        /* a replica whose master now serves other slots (a reshard took some) */
        {R1 " 10.0.0.9:6379@16379 myself,slave " M1 " 0 0 1 connected\n"
            M1 " 10.0.0.7:6379@16379 master - 0 1 1 connected 0-5459\n" LINE_M2,
         "the shard's master 10.0.0.7:6379 serves 0-5459, not 0-5460 (--slots): " MOVED},
        /* a replica that followed a failover into another shard */
        {R1 " 10.0.0.9:6379@16379 myself,slave " M2 " 0 0 1 connected\n"
            M1 " 10.0.0.7:6379@16379 master - 0 1 1 connected 0-5460\n" LINE_M2,
         "the shard's master 10.0.0.8:6379 serves 5461-16383, not 0-5460 (--slots): " MOVED},
        {M1 " :6379@16379 myself,master - 0 0 0 connected\n",
         "the shard's master " M1 " serves no slots, not 0-5460 (--slots): " MOVED},
        {R1 " 10.0.0.9:6379@16379 myself,slave " GONE " 0 0 1 connected\n" LINE_M2,
         "this node's master " GONE " is not in its CLUSTER NODES: no shard to check --slots of"},
        {R1 " 10.0.0.9:6379@16379 myself,slave - 0 0 1 connected\n" LINE_M2,
         "this node (" R1 ") is neither a master nor a replica of one: no shard to check --slots of"},
        {LINE_M2, "CLUSTER NODES has no myself line"},
        {"hello world\n", "CLUSTER NODES line 1: "},
    };
    cn_slots_t want;
    char err[512];
    CU_ASSERT_EQUAL_FATAL(slots_parse("0-5460", &want, err, sizeof err), 0);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        err[0] = '\0';
        int rc = slots_check(rows[i].nodes, strlen(rows[i].nodes), &want, err, sizeof err);
        CU_ASSERT_EQUAL(rc, rows[i].want ? -1 : 0);
        int ok = rows[i].want ? strncmp(err, rows[i].want, strlen(rows[i].want)) == 0 : err[0] == '\0';
        if (!ok)
            printf("\n  row %zu: \"%s\", want \"%s\"", i, err, rows[i].want ? rows[i].want : "");
        CU_ASSERT(ok);
    }
}

/* ---- the check against redis-server in cluster mode ---- */

static char dir[256];
static server_t master, replica, plain;
static char master_id[64];
static int bus_port[2]; /* the master's and the replica's cluster bus */

static int wait_cmd_has(int port, const char *cmd, const char *needle, int deadline_ms)
{
    for (int waited = 0; waited <= deadline_ms; waited += 50) {
        struct timeval tv = {0, 500000};
        redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
        redisReply *r = c && !c->err ? redisCommand(c, "AUTH %s", "pw") : NULL;
        freeReplyObject(r);
        r = c && !c->err ? redisCommand(c, cmd) : NULL;
        int found = r && r->type == REDIS_REPLY_STRING && strstr(r->str, needle);
        if (found && !strcmp(cmd, "CLUSTER MYID"))
            snprintf(master_id, sizeof master_id, "%s", r->str);
        freeReplyObject(r);
        if (c)
            redisFree(c);
        if (found)
            return 1;
        nap_ms(50);
    }
    return 0;
}

static int run_cmd(int port, const char *cmd)
{
    struct timeval tv = {1, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    redisReply *r = c && !c->err ? redisCommand(c, "AUTH %s", "pw") : NULL;
    freeReplyObject(r);
    r = c && !c->err ? redisCommand(c, cmd) : NULL;
    int ok = r && r->type != REDIS_REPLY_ERROR;
    if (r && !ok)
        printf("\n  %s: %s", cmd, r->str);
    freeReplyObject(r);
    if (c)
        redisFree(c);
    return ok ? 0 : -1;
}

/* A cluster-mode node on a free port, its bus on another (port + 10000, Redis's default,
 * may be past 65535 or taken). */
static int cluster_node(server_t *s, const char *name)
{
    static char conf[2][320], bus[2][16];
    int i = s == &replica;
    snprintf(conf[i], sizeof conf[i], "%s/%s.conf", dir, name);
    bus_port[i] = free_port();
    snprintf(bus[i], sizeof bus[i], "%d", bus_port[i]);
    const char *extra[] = {"--cluster-enabled", "yes", "--cluster-config-file", conf[i], "--cluster-port", bus[i],
                           "--cluster-node-timeout", "2000", "--requirepass", "pw", "--masterauth", "pw", "--dir",
                           dir, NULL};
    return server_start(s, 0, extra);
}

static int live_clean(void)
{
    server_stop(&master);
    server_stop(&replica);
    server_stop(&plain);
    tmpdir_remove(dir);
    return 0;
}

/* A master serving 0-5460, a replica of it (met, then CLUSTER REPLICATE), and a
 * redis-server not in cluster mode. On failure what was started is stopped (CUnit runs
 * no cleanup after a failed init). */
static int live_init(void)
{
    char cmd[128];
    const char *step = "start";
    if (tmpdir_make(dir, sizeof dir, "test_backup_shard") != 0 || cluster_node(&master, "m") != 0 ||
        cluster_node(&replica, "r") != 0 || server_start(&plain, 0, NULL) != 0)
        goto fail;
    step = "ADDSLOTSRANGE";
    if (run_cmd(master.port, "CLUSTER ADDSLOTSRANGE 0 5460") != 0 ||
        !wait_cmd_has(master.port, "CLUSTER MYID", "", 1000))
        goto fail;
    step = "MEET";
    snprintf(cmd, sizeof cmd, "CLUSTER MEET 127.0.0.1 %d %d", master.port, bus_port[0]);
    if (run_cmd(replica.port, cmd) != 0 || !wait_cmd_has(replica.port, "CLUSTER NODES", master_id, 10000))
        goto fail;
    step = "REPLICATE";
    snprintf(cmd, sizeof cmd, "CLUSTER REPLICATE %s", master_id);
    /* the replica may not know the master as a master yet: ask again until it does */
    for (int i = 0; i < 100 && run_cmd(replica.port, cmd) != 0; i++)
        nap_ms(100);
    /* a replica, and the master's slots in its view (they come with the master's pongs) */
    if (wait_cmd_has(replica.port, "CLUSTER NODES", "myself,slave", 10000) &&
        wait_cmd_has(replica.port, "CLUSTER NODES", " connected 0-5460", 10000))
        return 0;
fail:
    printf("\n  live_init: %s failed", step);
    live_clean();
    return -1;
}

/* take_check_slots against 127.0.0.1:port with --slots slots: its return, err. */
static int check_at(int port, const char *slots, const char *password, char *err, size_t errlen)
{
    backup_args_t a;
    memset(&a, 0, sizeof a);
    snprintf(a.host, sizeof a.host, "127.0.0.1");
    a.port = port;
    a.slots = slots;
    CU_ASSERT_EQUAL_FATAL(slots_parse(slots, &a.want_slots, err, errlen), 0);
    err[0] = '\0';
    return take_check_slots(&a, password, 5000, err, errlen);
}

static void test_live_master_and_replica(void)
{
    char err[512], want[512];
    CU_ASSERT_EQUAL(check_at(master.port, "0-5460", "pw", err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(err, "");
    CU_ASSERT_EQUAL(check_at(replica.port, "0-5460", "pw", err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(err, "");
    CU_ASSERT_EQUAL(check_at(replica.port, "0-5461", "pw", err, sizeof err), -1);
    snprintf(want, sizeof want, "the shard's master 127.0.0.1:%d serves 0-5460, not 0-5461 (--slots): " MOVED,
             master.port);
    CU_ASSERT_STRING_EQUAL(err, want);
    CU_ASSERT_EQUAL(check_at(master.port, "5461-16383", "pw", err, sizeof err), -1);
    CU_ASSERT(strstr(err, "serves 0-5460, not 5461-16383 (--slots)") != NULL);
}

static void test_live_refusals(void)
{
    char err[512];
    CU_ASSERT_EQUAL(check_at(plain.port, "0-5460", NULL, err, sizeof err), -1);
    CU_ASSERT_STRING_EQUAL(err, "CLUSTER NODES: ERR This instance has cluster support disabled");
    /* AUTH as the sync's: a wrong password is the connection's failure, no slot verdict */
    CU_ASSERT_EQUAL(check_at(master.port, "0-5460", "wrong", err, sizeof err), -1);
    CU_ASSERT(strstr(err, "WRONGPASS") != NULL);
}

/* ---- restore --only-pod ---- */

static void test_pod_decide(void)
{
    char why[512];
    CU_ASSERT_EQUAL(restore_decide_pod("cache-shard0-0", NULL, why, sizeof why), RESTORE_DO);
    CU_ASSERT_STRING_EQUAL(why, "");
    CU_ASSERT_EQUAL(restore_decide_pod("cache-shard0-0", "cache-shard0-0", why, sizeof why), RESTORE_DO);
    CU_ASSERT_STRING_EQUAL(why, "");
    CU_ASSERT_EQUAL(restore_decide_pod("cache-shard0-1", "cache-shard0-0", why, sizeof why), RESTORE_SKIP);
    CU_ASSERT_STRING_EQUAL(why, "this pod is cache-shard0-1, the restore is for cache-shard0-0 (--only-pod): it "
                                "starts empty and replicates from its shard's master");
    /* a prefix is another name */
    CU_ASSERT_EQUAL(restore_decide_pod("cache-shard0-10", "cache-shard0-1", why, sizeof why), RESTORE_SKIP);
}

static void write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_EQUAL((size_t)write(fd, text, strlen(text)), strlen(text));
    close(fd);
}

/* restore_prepare with --only-pod pod into a data dir holding only a killed restore's
 * temporary file: its return, its output in out. */
static int prepare_as(const char *dir_, const char *pod, char *out, size_t cap)
{
    char to[300], *buf = NULL;
    size_t len = 0;
    backup_args_t a;
    memset(&a, 0, sizeof a);
    snprintf(to, sizeof to, "%s/dump.rdb", dir_);
    a.cmd = BACKUP_CMD_RESTORE;
    a.to = to;
    a.bucket = "backups";
    a.key = "c/shard0.rdb";
    a.only_pod = pod;
    FILE *f = open_memstream(&buf, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    char err[256] = "";
    int rc = restore_prepare(&a, f, err, sizeof err);
    fclose(f);
    snprintf(out, cap, "%s%s", buf ? buf : "", err);
    free(buf);
    return rc;
}

static void test_pod_prepare(void)
{
    char d[256], tmp[300], out[1024], host[256];
    struct stat st;
    CU_ASSERT_FATAL(tmpdir_make(d, sizeof d, "test_backup_shard") == 0);
    CU_ASSERT_FATAL(gethostname(host, sizeof host) == 0);
    snprintf(tmp, sizeof tmp, "%s/dump.rdb.restore.AbC123", d);
    write_file(tmp, "partial");

    /* another pod: skipped, nothing of the directory touched (not even the stale file) */
    CU_ASSERT_EQUAL(prepare_as(d, "no-such-pod-0", out, sizeof out), 1);
    CU_ASSERT(strstr(out, "{\"result\":\"skipped\",\"bucket\":\"backups\",\"key\":\"c/shard0.rdb\"") == out);
    CU_ASSERT(strstr(out, "the restore is for no-such-pod-0 (--only-pod)") != NULL);
    CU_ASSERT_EQUAL(stat(tmp, &st), 0);
    /* another pod skips before looking at the directory: a missing one is no error */
    char gone[300];
    snprintf(gone, sizeof gone, "%s/absent", d);
    CU_ASSERT_EQUAL(prepare_as(gone, "no-such-pod-0", out, sizeof out), 1);

    /* this pod: the restore goes on (the stale file removed before the download) */
    CU_ASSERT_EQUAL(prepare_as(d, host, out, sizeof out), 0);
    CU_ASSERT_STRING_EQUAL(out, "");
    CU_ASSERT_NOT_EQUAL(stat(tmp, &st), 0);
    tmpdir_remove(d);
}

CU_HOOKS({"--slots against redis-server", live_init, live_clean, NULL, NULL});

static const cu_entry_t tests[] = {
    CU_SUITE("--slots text"),
    {"good lists: any order, touching ranges merged", test_parse_good},
    {"garbage refused, naming the item", test_parse_bad},
    CU_SUITE("--slots check"),
    {"the shard's master from CLUSTER NODES texts", test_check_table},
    CU_SUITE("--slots against redis-server"),
    {"a master and its replica: the same slots pass, others fail", test_live_master_and_replica},
    {"a node not in cluster mode, a wrong password", test_live_refusals},
    CU_SUITE("restore --only-pod"),
    {"the decision", test_pod_decide},
    {"another pod leaves the data directory alone", test_pod_prepare},
};
CU_MAIN(tests)
