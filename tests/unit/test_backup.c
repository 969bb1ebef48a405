/* rdc-backup's pure parts (backup/): the replica's side of a full synchronisation
 * (replsync) against canned byte streams fed whole and in every split, the command line,
 * and the restore's skip rule. The I/O shells run against real servers in
 * tests/s3/backup.sh (make backup-check). */
#include "cli.h"
#include "replsync.h"
#include "restore.h"

#include "cu_table.h"
#include "text_case.h"
#include "tmpdir.h"

#include <CUnit/CUnit.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- replsync ---- */

typedef struct {
    char data[4096];
    size_t len;
    int fail_after; /* > 0: the sink refuses once it holds this many bytes */
} sink_t;

static int sink(void *ctx, const void *buf, size_t len)
{
    sink_t *s = ctx;
    if (s->fail_after > 0 && s->len + len > (size_t)s->fail_after)
        return -1;
    if (len > sizeof s->data - s->len)
        return -1;
    memcpy(s->data + s->len, buf, len);
    s->len += len;
    return 0;
}

#define MARK "0123456789abcdefghij0123456789abcdefghij"

static const char *const pre_names[] = {"AUTH", "REPLCONF capa eof", "REPLCONF rdb-only"};
static const int pre_optional[] = {0, 0, 1};

/* Feed stream in chunks of step bytes (0: whole); returns the final state, *used_total
 * the bytes consumed. */
static replsync_state_t run(replsync_t *p, size_t npre, const char *stream, size_t len, size_t step, sink_t *s,
                            size_t *used_total)
{
    replsync_init(p, npre, pre_names + (3 - npre), pre_optional + (3 - npre));
    size_t off = 0, used = 0;
    replsync_state_t st = p->state;
    while (off < len) {
        size_t n = step && step < len - off ? step : len - off;
        st = replsync_feed(p, stream + off, n, &used, sink, s);
        off += used;
        if (used < n)
            break;
    }
    if (used_total)
        *used_total = off;
    return st;
}

static void test_len_form_every_split(void)
{
    static const char stream[] = "+OK\r\n-ERR unknown rdb-only\r\n\n\n"
                                 "+FULLRESYNC 8de1787ba490483314a4d30f1c628bc5025eb761 1234\r\n"
                                 "\n$11\r\nREDIS0011\xff\x01"
                                 "*1\r\n$4\r\nPING\r\n";
    size_t len = sizeof stream - 1, rdb_end = len - strlen("*1\r\n$4\r\nPING\r\n");
    for (size_t step = 0; step <= len; step++) {
        replsync_t p;
        sink_t s = {0};
        size_t used = 0;
        replsync_state_t st = run(&p, 2, stream, len, step, &s, &used);
        CU_ASSERT_EQUAL_FATAL(st, REPLSYNC_DONE);
        CU_ASSERT_EQUAL(used, rdb_end); /* the command stream after the RDB is left */
        CU_ASSERT_EQUAL(s.len, 11);
        CU_ASSERT(memcmp(s.data, "REDIS0011\xff\x01", 11) == 0);
        CU_ASSERT_EQUAL(p.offset, 1234);
        CU_ASSERT_STRING_EQUAL(p.replid, "8de1787ba490483314a4d30f1c628bc5025eb761");
        CU_ASSERT_FALSE(p.eof_form);
    }
}

static void test_eof_form_every_split(void)
{
    /* The payload holds a near-marker (its first 39 bytes) that must not end it. */
    static const char stream[] = "+OK\r\n+OK\r\n+OK\r\n+FULLRESYNC abc 0\r\n$EOF:" MARK "\r\n"
                                 "REDIS0011" "0123456789abcdefghij0123456789abcdefghi" "\xff" MARK;
    size_t len = sizeof stream - 1;
    const char *want = "REDIS0011" "0123456789abcdefghij0123456789abcdefghi" "\xff";
    for (size_t step = 0; step <= len; step++) {
        replsync_t p;
        sink_t s = {0};
        replsync_state_t st = run(&p, 3, stream, len, step, &s, NULL);
        CU_ASSERT_EQUAL_FATAL(st, REPLSYNC_DONE);
        CU_ASSERT_EQUAL(s.len, strlen(want));
        CU_ASSERT(memcmp(s.data, want, strlen(want)) == 0);
        CU_ASSERT(p.eof_form);
        CU_ASSERT_EQUAL(p.offset, 0);
        CU_ASSERT_EQUAL(p.rdb_len, strlen(want));
    }
}

static void test_empty_rdb_and_no_pre(void)
{
    replsync_t p;
    sink_t s = {0};
    static const char stream[] = "+FULLRESYNC x 7\r\n$0\r\n";
    CU_ASSERT_EQUAL(run(&p, 0, stream, sizeof stream - 1, 0, &s, NULL), REPLSYNC_DONE);
    CU_ASSERT_EQUAL(s.len, 0);
    CU_ASSERT_EQUAL(p.offset, 7);
}

static void test_refusals(void)
{
    static const struct {
        size_t npre;
        const char *stream;
        const char *want_err;
    } rows[] = {
        {3, "-WRONGPASS invalid username-password pair or user is disabled.\r\n",
         "AUTH: WRONGPASS invalid username-password pair or user is disabled."},
        {2, "-NOAUTH Authentication required.\r\n", "REPLCONF capa eof: NOAUTH Authentication required."},
        {1, "+OK\r\n-NOMASTERLINK Can't SYNC while not connected with my master\r\n",
         "PSYNC: NOMASTERLINK Can't SYNC while not connected with my master"},
        {0, "+CONTINUE abc\r\n", "PSYNC: not a full resynchronisation: \"+CONTINUE abc\""},
        {0, "+FULLRESYNC abc notanumber\r\n", "PSYNC: malformed reply \"+FULLRESYNC abc notanumber\""},
        {0, "+FULLRESYNC abc\r\n", "PSYNC: malformed reply \"+FULLRESYNC abc\""},
        {0, "+FULLRESYNC a 1\r\n$12x\r\n", "RDB header: malformed length \"$12x\""},
        {0, "+FULLRESYNC a 1\r\n$-1\r\n", "RDB header: malformed length \"$-1\""},
        {0, "+FULLRESYNC a 1\r\n$EOF:short\r\n", "RDB header: EOF marker not 40 bytes"},
        {0, "+FULLRESYNC a 1\r\n-ERR child died\r\n", "RDB: the server gave up: ERR child died"},
        {1, ":1\r\n", "handshake: unexpected reply \":1\""},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        replsync_t p;
        sink_t s = {0};
        CU_ASSERT_EQUAL(run(&p, rows[i].npre, rows[i].stream, strlen(rows[i].stream), 0, &s, NULL),
                        REPLSYNC_FAILED);
        if (strcmp(p.err, rows[i].want_err) != 0)
            printf("\n  row %zu: \"%s\", want \"%s\"", i, p.err, rows[i].want_err);
        CU_ASSERT_STRING_EQUAL(p.err, rows[i].want_err);
        CU_ASSERT_EQUAL(s.len, 0);
        /* A failed sync takes nothing more. */
        size_t used = 9;
        CU_ASSERT_EQUAL(replsync_feed(&p, "+OK\r\n", 5, &used, sink, &s), REPLSYNC_FAILED);
        CU_ASSERT_EQUAL(used, 0);
    }
}

static void test_long_line_and_sink_failure(void)
{
    replsync_t p;
    sink_t s = {0};
    char line[REPLSYNC_MAX_LINE + 10];
    memset(line, 'x', sizeof line);
    line[0] = '+';
    CU_ASSERT_EQUAL(run(&p, 0, line, sizeof line, 7, &s, NULL), REPLSYNC_FAILED);
    CU_ASSERT_STRING_EQUAL(p.err, "FULLRESYNC: line too long");

    static const char stream[] = "+FULLRESYNC a 1\r\n$10\r\n0123456789";
    s.fail_after = 4;
    CU_ASSERT_EQUAL(run(&p, 0, stream, sizeof stream - 1, 3, &s, NULL), REPLSYNC_FAILED);
    CU_ASSERT_STRING_EQUAL(p.err, "RDB: the RDB's sink failed");
}

static void test_closed(void)
{
    static const struct {
        const char *stream;
        size_t npre;
        const char *want;
    } rows[] = {
        {"", 2, "connection closed by the server while waiting for the handshake's replies"},
        {"+OK\r\n", 1, "connection closed by the server while waiting for the FULLRESYNC"},
        {"+FULLRESYNC a 1\r\n\n", 0, "connection closed by the server while waiting for the RDB header"},
        {"+FULLRESYNC a 1\r\n$10\r\n0123", 0, "connection closed after 4 of 10 RDB bytes"},
        {"+FULLRESYNC a 1\r\n$EOF:" MARK "\r\n0123", 0,
         "connection closed after 4 RDB bytes, before the EOF marker"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        replsync_t p;
        sink_t s = {0};
        run(&p, rows[i].npre, rows[i].stream, strlen(rows[i].stream), 0, &s, NULL);
        CU_ASSERT_EQUAL(replsync_closed(&p), REPLSYNC_FAILED);
        CU_ASSERT_STRING_EQUAL(p.err, rows[i].want);
    }
    replsync_t p;
    sink_t s = {0};
    run(&p, 0, "+FULLRESYNC a 1\r\n$1\r\nx", 22, 0, &s, NULL);
    CU_ASSERT_EQUAL(replsync_closed(&p), REPLSYNC_DONE);
}

/* ---- the command line ---- */

static int parse(backup_args_t *a, char *err, size_t errlen, const char *line)
{
    static char copy[1024];
    char *argv[40];
    int argc = 0;
    snprintf(copy, sizeof copy, "rdc-backup %s", line);
    for (char *save = NULL, *t = strtok_r(copy, " ", &save); t && argc < 40; t = strtok_r(NULL, " ", &save))
        argv[argc++] = t;
    err[0] = '\0';
    return backup_args_parse(argc, argv, a, err, errlen);
}

#define NOT_IPPORT "\": not IP:PORT (an IP literal: nothing is resolved)"
#define S3FLAGS " --endpoint http://127.0.0.1:9000 --bucket backups --key k --credentials-dir /c"
#define S3BASE " --endpoint http://127.0.0.1:9000 --bucket backups --credentials-dir /c"
#define REDIS " --redis 10.0.0.5:6379"
#define NOT_SLOT " is not a slot N or a range A-B (A <= B) of slots 0 to 16383"
#define NOT_POD ": not a pod name (a DNS-1123 subdomain of at most 253 characters)"
#define X50 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
#define LONG_254 X50 X50 X50 X50 X50 "xxxx"

static void test_args_ok(void)
{
    backup_args_t a;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(parse(&a, err, sizeof err, "take --redis 10.0.0.5:6379 --password-file /p --tls-dir /t"
                                                    " --timeout 2m" S3FLAGS " --region eu-west-1 --part-size-mib 16"),
                          0);
    CU_ASSERT_EQUAL(a.cmd, BACKUP_CMD_TAKE);
    CU_ASSERT_STRING_EQUAL(a.host, "10.0.0.5");
    CU_ASSERT_EQUAL(a.port, 6379);
    CU_ASSERT_STRING_EQUAL(a.password_file, "/p");
    CU_ASSERT_STRING_EQUAL(a.tls_dir, "/t");
    CU_ASSERT_DOUBLE_EQUAL(a.timeout_s, 120, 1e-9);
    CU_ASSERT_STRING_EQUAL(a.region, "eu-west-1");
    CU_ASSERT_EQUAL(a.part_size_mib, 16);

    CU_ASSERT_EQUAL_FATAL(parse(&a, err, sizeof err, "take --redis [fd00::5]:6380" S3FLAGS), 0);
    CU_ASSERT_STRING_EQUAL(a.host, "fd00::5");
    CU_ASSERT_EQUAL(a.port, 6380);
    CU_ASSERT_STRING_EQUAL(a.region, "us-east-1");
    CU_ASSERT_DOUBLE_EQUAL(a.timeout_s, 60, 1e-9);

    CU_ASSERT_EQUAL_FATAL(parse(&a, err, sizeof err, "restore --to /data/dump.rdb --force" S3FLAGS), 0);
    CU_ASSERT_EQUAL(a.cmd, BACKUP_CMD_RESTORE);
    CU_ASSERT(a.force);
    CU_ASSERT_PTR_NULL(a.expect_sha256);

    CU_ASSERT_EQUAL(parse(&a, err, sizeof err, "take --help"), 0);
    CU_ASSERT(a.help);
    CU_ASSERT_EQUAL(parse(&a, err, sizeof err, "--help"), 0);
    CU_ASSERT(a.help);
}

static void test_args_schedule_ok(void)
{
    backup_args_t a;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(parse(&a, err, sizeof err, "take" REDIS S3BASE " --prefix prod/cache/ --keep 3"
                                                     " --termination-log /dev/termination-log"),
                          0);
    CU_ASSERT_PTR_NULL(a.key);
    CU_ASSERT_STRING_EQUAL(a.prefix, "prod/cache");
    CU_ASSERT_EQUAL(a.keep, 3);
    CU_ASSERT_STRING_EQUAL(a.termination_log, "/dev/termination-log");
    CU_ASSERT_EQUAL_FATAL(parse(&a, err, sizeof err, "take" REDIS S3BASE " --key k"), 0);
    CU_ASSERT_EQUAL(a.keep, -1);
    CU_ASSERT_PTR_NULL(a.prefix);
    CU_ASSERT_PTR_NULL(a.termination_log);
    CU_ASSERT_EQUAL_FATAL(parse(&a, err, sizeof err, "prune --prefix p --keep 1 --list-max-keys 2" S3BASE), 0);
    CU_ASSERT_EQUAL(a.cmd, BACKUP_CMD_PRUNE);
    CU_ASSERT_EQUAL(a.list_max_keys, 2);
    CU_ASSERT_EQUAL_FATAL(parse(&a, err, sizeof err, "list --prefix p/" S3BASE), 0);
    CU_ASSERT_EQUAL(a.cmd, BACKUP_CMD_LIST);
    CU_ASSERT_STRING_EQUAL(a.prefix, "p");
    CU_ASSERT_EQUAL_FATAL(parse(&a, err, sizeof err, "restore --to /d --key k --termination-log /t" S3BASE), 0);
    CU_ASSERT_STRING_EQUAL(a.termination_log, "/t");
}

/* Cluster mode's flags: take --slots (parsed into the slot set), restore --only-pod. */
static void test_args_cluster_ok(void)
{
    backup_args_t a;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(parse(&a, err, sizeof err, "take" REDIS S3FLAGS " --slots 0-10,16383"), 0);
    CU_ASSERT_STRING_EQUAL(a.slots, "0-10,16383");
    CU_ASSERT(cn_slots_has(&a.want_slots, 0) && cn_slots_has(&a.want_slots, 10));
    CU_ASSERT(!cn_slots_has(&a.want_slots, 11) && cn_slots_has(&a.want_slots, 16383));
    CU_ASSERT_EQUAL_FATAL(parse(&a, err, sizeof err, "take" REDIS S3FLAGS), 0);
    CU_ASSERT_PTR_NULL(a.slots);
    CU_ASSERT_EQUAL_FATAL(parse(&a, err, sizeof err, "restore --to /d --only-pod cache-shard2-0" S3FLAGS), 0);
    CU_ASSERT_STRING_EQUAL(a.only_pod, "cache-shard2-0");
    CU_ASSERT_EQUAL_FATAL(parse(&a, err, sizeof err, "restore --to /d --aof --only-pod a.b-c" S3FLAGS), 0);
    CU_ASSERT_EQUAL_FATAL(parse(&a, err, sizeof err, "restore --to /d" S3FLAGS), 0);
    CU_ASSERT_PTR_NULL(a.only_pod);
}

static void test_args_refused(void)
{
    static const text_case_t rows[] = {
        {"", "a subcommand is required: take, restore, prune or list"},
        {"backup", "unknown subcommand \"backup\": take, restore, prune or list"},
        {"take" S3FLAGS, "take: --redis is required"},
        {"take --redis redis-0:6379" S3FLAGS, "--redis \"redis-0:6379" NOT_IPPORT},
        {"take --redis 10.0.0.5" S3FLAGS, "--redis \"10.0.0.5" NOT_IPPORT},
        {"take --redis 10.0.0.5:0" S3FLAGS, "--redis \"10.0.0.5:0" NOT_IPPORT},
        {"take --redis 10.0.0.5:6379x" S3FLAGS, "--redis \"10.0.0.5:6379x" NOT_IPPORT},
        {"take --redis 10.0.0.5:6379 --bucket b --key k --credentials-dir c", "take: --endpoint is required"},
        {"take --redis 10.0.0.5:6379 --endpoint e --key k --credentials-dir c", "take: --bucket is required"},
        {"restore --to /d --endpoint e --bucket b --credentials-dir c", "restore: --key is required"},
        {"restore --to /d --endpoint e --bucket b --key k", "restore: --credentials-dir is required"},
        {"restore" S3FLAGS, "restore: --to is required"},
        {"restore --to /d --expect-sha256 ABC" S3FLAGS, "--expect-sha256: not 64 lower-case hex digits"},
        {"restore --to /d --aof --force" S3FLAGS,
         "--aof with --force: an append-only directory is never restored over"},
        {"take --redis 10.0.0.5:6379 --part-size-mib 4" S3FLAGS, "--part-size-mib 4: S3 parts are 5 to 5120 MiB"},
        {"take --redis 10.0.0.5:6379 --tls-server-name r" S3FLAGS, "--tls-server-name needs --tls-dir"},
        {"take --redis 10.0.0.5:6379 --timeout 0s" S3FLAGS, "--timeout must be positive"},
        {"take --redis 10.0.0.5:6379 --bogus 1" S3FLAGS, "unknown flag \"--bogus\" (see --help)"},
        {"take" REDIS S3BASE, "take: --key or --prefix is required, not both"},
        {"take" REDIS S3BASE " --key k --prefix p", "take: --key or --prefix is required, not both"},
        {"take" REDIS S3BASE " --key k --keep 2",
         "--keep needs --prefix (retention keeps the backups named under it)"},
        {"take" REDIS S3BASE " --prefix p --keep 0", "--keep 0: at least 1 (the backup just written is always kept)"},
        {"take" REDIS S3BASE " --prefix /p",
         "--prefix \"/p\": a key prefix (\"prod/cache\"): not empty, not starting with '/'"},
        {"prune --prefix p" S3BASE, "prune: --keep is required"},
        {"prune --keep 2" S3BASE, "prune: --prefix is required"},
        {"prune --prefix p --keep 0" S3BASE, "--keep 0: at least 1 (the backup just written is always kept)"},
        {"prune --prefix p --keep 2 --key k" S3BASE, "prune: --key does not apply"},
        {"prune --prefix p --keep 2", "prune: --endpoint is required"},
        {"prune --prefix p --keep 2 --list-max-keys 1001" S3BASE, "--list-max-keys 1001: 1 to 1000"},
        {"list --prefix p --keep 2" S3BASE, "list: --keep does not apply"},
        {"list --prefix p --termination-log /t" S3BASE, "list: --termination-log does not apply"},
        {"list" S3BASE, "list: --prefix is required"},
        {"restore --to /d --key k --prefix p" S3BASE, "restore: --prefix does not apply"},
        {"restore --to /d --key k --keep 1" S3BASE, "restore: --keep does not apply"},
        {"take" REDIS S3FLAGS " --slots 0-5460,", "--slots \"0-5460,\": \"\"" NOT_SLOT},
        {"take" REDIS S3FLAGS " --slots 5461-10922,6000", "--slots \"5461-10922,6000\": slot 6000 is given twice"},
        {"take" REDIS S3FLAGS " --only-pod c-0", "take: --only-pod does not apply"},
        {"restore --to /d --slots 0-5460" S3FLAGS, "restore: --slots does not apply"},
        {"prune --prefix p --keep 2 --slots 0" S3BASE, "prune: --slots does not apply"},
        {"list --prefix p --only-pod c-0" S3BASE, "list: --only-pod does not apply"},
        {"restore --to /d --only-pod Cache-0" S3FLAGS, "--only-pod \"Cache-0\"" NOT_POD},
        {"restore --to /d --only-pod c_0" S3FLAGS, "--only-pod \"c_0\"" NOT_POD},
        {"restore --to /d --only-pod -c0" S3FLAGS, "--only-pod \"-c0\"" NOT_POD},
        {"restore --to /d --only-pod c0." S3FLAGS, "--only-pod \"c0.\"" NOT_POD},
        {"restore --to /d --only-pod " LONG_254 S3FLAGS, "--only-pod \"" X50 "xxxxxxxxxxxxxx...\"" NOT_POD},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        backup_args_t a;
        char err[256];
        CU_ASSERT_EQUAL(parse(&a, err, sizeof err, rows[i].in), -1);
        if (strcmp(err, rows[i].want) != 0)
            printf("\n  row %zu: \"%s\", want \"%s\"", i, err, rows[i].want);
        CU_ASSERT_STRING_EQUAL(err, rows[i].want);
    }
}

/* ---- the skip rule ---- */

static void test_decide_table(void)
{
    static const struct {
        restore_seen_t seen;
        int force;
        restore_action_t want;
        const char *why;
    } rows[] = {
        {{0, 0, 0, 0}, 0, RESTORE_DO, ""},
        {{1, 0, 0, 0}, 0, RESTORE_DO, ""}, /* an empty dump.rdb is no data */
        {{1, 191, 0, 0}, 0, RESTORE_SKIP,
         "the data directory holds data (the target has 191 bytes): left alone (--force restores over it)"},
        {{0, 0, 2, 0}, 0, RESTORE_SKIP,
         "the data directory holds data (appendonlydir has 2 entries): left alone (--force restores over it)"},
        {{0, 0, 0, 10}, 0, RESTORE_SKIP,
         "the data directory holds data (appendonly.aof has 10 bytes): left alone (--force restores over it)"},
        {{1, 191, 0, 0}, 1, RESTORE_DO, "--force: restoring although the target has 191 bytes"},
        {{0, 0, 3, 0}, 1, RESTORE_DO, "--force: restoring although appendonlydir has 3 entries"},
        {{0, 0, 0, 0}, 1, RESTORE_DO, ""},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char why[256];
        CU_ASSERT_EQUAL(restore_decide(&rows[i].seen, rows[i].force, why, sizeof why), rows[i].want);
        if (strcmp(why, rows[i].why) != 0)
            printf("\n  row %zu: \"%s\", want \"%s\"", i, why, rows[i].why);
        CU_ASSERT_STRING_EQUAL(why, rows[i].why);
    }
}

static void write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_EQUAL((size_t)write(fd, text, strlen(text)), strlen(text));
    close(fd);
}

static void test_survey(void)
{
    char dir[256], target[300], path[300], err[256];
    restore_seen_t seen;
    CU_ASSERT_FATAL(tmpdir_make(dir, sizeof dir, "test_backup") == 0);
    snprintf(target, sizeof target, "%s/dump.rdb", dir);
    CU_ASSERT_EQUAL(restore_survey(target, &seen, err, sizeof err), 0);
    CU_ASSERT_FALSE(seen.target_exists);
    CU_ASSERT_EQUAL(seen.aof_dir_entries, 0);

    write_file(target, "");
    snprintf(path, sizeof path, "%s/appendonlydir", dir);
    CU_ASSERT_FATAL(mkdir(path, 0700) == 0);
    CU_ASSERT_EQUAL(restore_survey(target, &seen, err, sizeof err), 0);
    CU_ASSERT(seen.target_exists);
    CU_ASSERT_EQUAL(seen.target_size, 0);
    CU_ASSERT_EQUAL(seen.aof_dir_entries, 0);

    write_file(target, "REDIS");
    snprintf(path, sizeof path, "%s/appendonlydir/appendonly.aof.1.base.rdb", dir);
    write_file(path, "x");
    snprintf(path, sizeof path, "%s/appendonly.aof", dir);
    write_file(path, "*1\r\n");
    CU_ASSERT_EQUAL(restore_survey(target, &seen, err, sizeof err), 0);
    CU_ASSERT_EQUAL(seen.target_size, 5);
    CU_ASSERT_EQUAL(seen.aof_dir_entries, 1);
    CU_ASSERT_EQUAL(seen.aof_file_size, 4);

    snprintf(path, sizeof path, "%s/nodir/dump.rdb", dir);
    CU_ASSERT_EQUAL(restore_survey(path, &seen, err, sizeof err), -1);
    char want[400];
    snprintf(want, sizeof want, "data directory %s/nodir: No such file or directory", dir);
    CU_ASSERT_STRING_EQUAL(err, want);
    tmpdir_remove(dir);
}

static void test_read_small(void)
{
    char dir[256], path[300], err[256];
    size_t len = 0;
    CU_ASSERT_FATAL(tmpdir_make(dir, sizeof dir, "test_backup") == 0);
    snprintf(path, sizeof path, "%s/secret-access-key", dir);
    write_file(path, "s3cr3t\r\n");
    char *v = backup_read_small(dir, "secret-access-key", &len, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    CU_ASSERT_STRING_EQUAL(v, "s3cr3t");
    CU_ASSERT_EQUAL(len, 6);
    backup_free_secret(v, len);

    write_file(path, "\n");
    CU_ASSERT_PTR_NULL(backup_read_small(dir, "secret-access-key", NULL, err, sizeof err));
    char want[400];
    snprintf(want, sizeof want, "%s: empty", path);
    CU_ASSERT_STRING_EQUAL(err, want);
    CU_ASSERT_PTR_NULL(backup_read_small(dir, "access-key-id", NULL, err, sizeof err));
    snprintf(want, sizeof want, "%s/access-key-id: No such file or directory", dir);
    CU_ASSERT_STRING_EQUAL(err, want);
    tmpdir_remove(dir);
}

static const cu_entry_t tests[] = {
    CU_SUITE("replsync"),
    {"$<len> form, split at every byte; the command stream after it left", test_len_form_every_split},
    {"$EOF:<mark> form, split at every byte; a near-marker is data", test_eof_form_every_split},
    {"an empty RDB; no handshake commands", test_empty_rdb_and_no_pre},
    {"refusals name the command and carry Redis's words", test_refusals},
    {"a line too long; the sink refusing", test_long_line_and_sink_failure},
    {"the connection closing says where", test_closed},
    CU_SUITE("command line"),
    {"take and restore flags", test_args_ok},
    {"take --prefix --keep --termination-log, prune, list", test_args_schedule_ok},
    {"Cluster mode: take --slots, restore --only-pod", test_args_cluster_ok},
    {"refusals name the flag", test_args_refused},
    {"small files: trailing newline dropped, empty and missing refused", test_read_small},
    CU_SUITE("restore skip rule"),
    {"decisions as a table", test_decide_table},
    {"the survey of a data directory", test_survey},
};
CU_MAIN(tests)
