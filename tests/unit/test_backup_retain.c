/* rdc-backup's naming and retention, pure (backup/retain.h): the names of scheduled
 * backups, which objects under a prefix are ours, their order, and the keep decision as
 * a table (ties, N = 0 refused, foreign objects, the new one always kept, a listing in
 * pages), and the termination log's file. The S3 half runs against versitygw in
 * tests/s3/backup.sh (make backup-check). */
#include "cli.h" /* backup_write_termination_log */
#include "retain.h"
#include "s3.h"

#include "cu_table.h"
#include "tmpdir.h"

#include <CUnit/CUnit.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* 2026-12-06T14:00:00Z */
#define T0 1796565600LL

/* ---- names ---- */

static void test_key_name_round_trip(void)
{
    char key[128];
    int64_t t = 0;
    CU_ASSERT_EQUAL_FATAL(retain_key_name("prod/cache", T0, key, sizeof key), 0);
    CU_ASSERT_STRING_EQUAL(key, "prod/cache/20261206T140000Z.rdb");
    CU_ASSERT_EQUAL(retain_key_time("prod/cache", key, &t), 0);
    CU_ASSERT_EQUAL(t, T0);
    char when[32];
    retain_time_str(t, when, sizeof when);
    CU_ASSERT_STRING_EQUAL(when, "2026-12-06T14:00:00Z");
    /* Leap day, end of year, the epoch. */
    static const struct {
        int64_t t;
        const char *name;
    } rows[] = {{1709164799LL, "p/20240228T235959Z.rdb"},
                {1709251199LL, "p/20240229T235959Z.rdb"},
                {1798761599LL, "p/20261231T235959Z.rdb"},
                {0, "p/19700101T000000Z.rdb"}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        CU_ASSERT_EQUAL(retain_key_name("p", rows[i].t, key, sizeof key), 0);
        CU_ASSERT_STRING_EQUAL(key, rows[i].name);
        CU_ASSERT_EQUAL(retain_key_time("p", rows[i].name, &t), 0);
        CU_ASSERT_EQUAL(t, rows[i].t);
    }
    CU_ASSERT_EQUAL(retain_key_name("prod/cache", T0, key, 31), -1); /* does not fit */
    CU_ASSERT_EQUAL(retain_key_name("p", -1, key, sizeof key), -1);
}

static void test_key_time_refused(void)
{
    static const char *const rows[] = {
        "prod/cache/20261206T140000Z.rdb.part", /* not the name */
        "prod/cache/20261206T140000Z",
        "prod/cache/20261206T140000.rdb",
        "prod/cache/20261206 140000Z.rdb",
        "prod/cache/2026-12-06T14:00:00Z.rdb", /* the extended form is not ours */
        "prod/cache/20260230T140000Z.rdb",     /* February 30th */
        "prod/cache/20261206T240000Z.rdb",     /* hour 24 */
        "prod/cache/20261306T140000Z.rdb",     /* month 13 */
        "prod/cache/2026120aT140000Z.rdb",
        "prod/cache/sub/20261206T140000Z.rdb", /* another prefix's */
        "prod/cache2/20261206T140000Z.rdb",    /* a sibling prefix */
        "prod/cach/20261206T140000Z.rdb",
        "prod/cache20261206T140000Z.rdb",
        "prod/cache/notes.txt",
        "prod/cache/",
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        int64_t t = 42;
        if (retain_key_time("prod/cache", rows[i], &t) != -1)
            printf("\n  row %zu: \"%s\" taken as ours", i, rows[i]);
        CU_ASSERT_EQUAL(retain_key_time("prod/cache", rows[i], &t), -1);
        CU_ASSERT_EQUAL(t, 42);
    }
}

static void test_prefix_norm(void)
{
    char out[RETAIN_PREFIX_MAX + 1], err[256];
    CU_ASSERT_EQUAL(retain_prefix_norm("prod/cache/", out, sizeof out, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(out, "prod/cache");
    CU_ASSERT_EQUAL(retain_prefix_norm("prod/cache//", out, sizeof out, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(out, "prod/cache");
    CU_ASSERT_EQUAL(retain_prefix_norm("c", out, sizeof out, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(out, "c");
    static const char *const bad[] = {"", "/", "//", "/prod"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CU_ASSERT_EQUAL(retain_prefix_norm(bad[i], out, sizeof out, err, sizeof err), -1);
        CU_ASSERT(strstr(err, "not empty, not starting with '/'") != NULL);
    }
    char longp[RETAIN_PREFIX_MAX + 2];
    memset(longp, 'a', sizeof longp - 1);
    longp[sizeof longp - 1] = '\0';
    CU_ASSERT_EQUAL(retain_prefix_norm(longp, out, sizeof out, err, sizeof err), -1);
    CU_ASSERT_STRING_EQUAL(err, "--prefix: longer than 1003 bytes (a key is at most 1024)");
    longp[RETAIN_PREFIX_MAX] = '\0';
    CU_ASSERT_EQUAL(retain_prefix_norm(longp, out, sizeof out, err, sizeof err), 0);
    char key[1100];
    CU_ASSERT_EQUAL(retain_key_name(out, T0, key, sizeof key), 0);
    CU_ASSERT_EQUAL(strlen(key), 1024); /* the longest prefix makes a key S3 takes */
}

/* ---- the keep decision ---- */

/* A key of ours under "p": day d of December 2026 at 14:00:00. */
#define DAY(d) "p/202612" #d "T140000Z.rdb"

typedef struct {
    const char *key;
    int complete;
} obj_in_t;

/* The table's result: "key=V ..." in the sorted order, V one of N K D F. */
static void describe(const retain_obj_t *o, size_t n, char *out, size_t cap)
{
    static const char v[] = {[RETAIN_FOREIGN] = 'F', [RETAIN_NEW] = 'N', [RETAIN_KEEP] = 'K', [RETAIN_DELETE] = 'D'};
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && len < cap; i++)
        len += (size_t)snprintf(out + len, cap - len, "%s%s=%c", i ? " " : "", o[i].key, v[o[i].verdict]);
}

static void test_decide_table(void)
{
    static const struct {
        const char *what;
        obj_in_t in[8];
        int keep;
        const char *new_key;
        int want_deleted;
        const char *want;
    } rows[] = {
        {"keep 2 of 3: the oldest goes",
         {{DAY(05), 1}, {DAY(07), 1}, {DAY(06), 1}},
         2, NULL, 1,
         DAY(07) "=K " DAY(06) "=K " DAY(05) "=D"},
        {"keep more than there are: none goes",
         {{DAY(05), 1}, {DAY(06), 1}},
         5, NULL, 0,
         DAY(06) "=K " DAY(05) "=K"},
        {"the new one counts as one of the N",
         {{DAY(05), 1}, {DAY(06), 1}, {DAY(07), 1}},
         2, DAY(07), 1,
         DAY(07) "=N " DAY(06) "=K " DAY(05) "=D"},
        {"the new one not listed yet still counts",
         {{DAY(05), 1}, {DAY(06), 1}},
         2, DAY(07), 1,
         DAY(06) "=K " DAY(05) "=D"},
        {"the new one named oldest (a clock behind) is kept, the oldest other goes",
         {{DAY(05), 1}, {DAY(06), 1}, {DAY(04), 1}},
         2, DAY(04), 1,
         DAY(06) "=K " DAY(05) "=D " DAY(04) "=N"},
        {"keep 1: only the new one",
         {{DAY(05), 1}, {DAY(06), 1}, {DAY(07), 1}},
         1, DAY(07), 2,
         DAY(07) "=N " DAY(06) "=D " DAY(05) "=D"},
        {"foreign objects: other names, nested, incomplete; never counted or deleted",
         {{DAY(05), 1},
          {"p/notes.txt", 1},
          {"p/sub/20261201T140000Z.rdb", 1},
          {DAY(06), 0},
          {"p/20261201T140000Z.rdb.tmp", 1},
          {DAY(04), 1},
          {DAY(07), 1}},
         2, NULL, 1,
         DAY(07) "=K " DAY(05) "=K " DAY(04) "=D p/20261201T140000Z.rdb.tmp=F " DAY(06) "=F p/notes.txt=F "
                 "p/sub/20261201T140000Z.rdb=F"},
        {"ties: the same key listed twice is one backup, kept or deleted together",
         {{DAY(06), 1}, {DAY(05), 1}, {DAY(06), 1}, {DAY(04), 1}, {DAY(04), 1}},
         2, NULL, 2,
         DAY(06) "=K " DAY(06) "=K " DAY(05) "=K " DAY(04) "=D " DAY(04) "=D"},
        {"ties: the new key also listed (twice) is the one new backup",
         {{DAY(06), 1}, {DAY(06), 1}, {DAY(05), 1}},
         2, DAY(06), 0,
         DAY(06) "=N " DAY(06) "=N " DAY(05) "=K"},
        {"nothing listed", {{NULL, 0}}, 3, DAY(07), 0, ""},
        {"only foreign objects", {{"p/a", 1}, {DAY(01), 0}}, 1, NULL, 0, DAY(01) "=F p/a=F"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        retain_obj_t objs[8];
        size_t n = 0;
        char got[1024], err[128];
        for (; n < 8 && rows[i].in[n].key; n++)
            objs[n] = (retain_obj_t){.key = rows[i].in[n].key, .complete = rows[i].in[n].complete, .ref = n};
        int del = retain_decide("p", objs, n, rows[i].keep, rows[i].new_key, err, sizeof err);
        describe(objs, n, got, sizeof got);
        if (del != rows[i].want_deleted || strcmp(got, rows[i].want) != 0)
            printf("\n  row %zu (%s): %d deleted, \"%s\"\n    want %d, \"%s\"", i, rows[i].what, del, got,
                   rows[i].want_deleted, rows[i].want);
        CU_ASSERT_EQUAL(del, rows[i].want_deleted);
        CU_ASSERT_STRING_EQUAL(got, rows[i].want);
        for (size_t j = 0; j < n; j++) /* ref travels with its object through the sort */
            CU_ASSERT_PTR_EQUAL(objs[j].key, rows[i].in[objs[j].ref].key);
    }
}

static void test_keep_zero_refused(void)
{
    retain_obj_t objs[] = {{.key = DAY(05), .complete = 1}, {.key = DAY(06), .complete = 1}};
    char err[128];
    for (int keep = 0; keep >= -1; keep--) {
        CU_ASSERT_EQUAL(retain_decide("p", objs, 2, keep, DAY(06), err, sizeof err), -1);
        CU_ASSERT(strstr(err, "at least 1 (the backup just written is always kept)") != NULL);
    }
    CU_ASSERT_STRING_EQUAL(objs[0].key, DAY(05)); /* untouched */
}

/* Two ListObjectsV2 pages (the first truncated, with its continuation token) joined, as
 * the catalog joins them (backup/prune.c), then decided: the newest of page one and of
 * page two compete as one listing. */
static void test_paged_listing(void)
{
    static const char page1[] =
        "<ListBucketResult><Name>b</Name><Prefix>p/</Prefix><MaxKeys>2</MaxKeys><IsTruncated>true</IsTruncated>"
        "<Contents><Key>p/20261201T140000Z.rdb</Key><LastModified>2026-12-07T00:00:00.000Z</LastModified>"
        "<Size>10</Size></Contents>"
        "<Contents><Key>p/20261203T140000Z.rdb</Key><LastModified>2026-12-07T00:00:00.000Z</LastModified>"
        "<Size>30</Size></Contents>"
        "<NextContinuationToken>tok/2==</NextContinuationToken></ListBucketResult>";
    static const char page2[] =
        "<ListBucketResult><Name>b</Name><Prefix>p/</Prefix><MaxKeys>2</MaxKeys><IsTruncated>false</IsTruncated>"
        "<Contents><Key>p/20261202T140000Z.rdb</Key><LastModified>2026-12-07T00:00:01.000Z</LastModified>"
        "<Size>20</Size></Contents>"
        "<Contents><Key>p/README</Key><Size>5</Size></Contents></ListBucketResult>";
    s3_list_page_t pg[2];
    CU_ASSERT_EQUAL_FATAL(s3_parse_list(page1, sizeof page1 - 1, &pg[0]), 0);
    CU_ASSERT_EQUAL_FATAL(s3_parse_list(page2, sizeof page2 - 1, &pg[1]), 0);
    CU_ASSERT_TRUE(pg[0].truncated);
    CU_ASSERT_STRING_EQUAL(pg[0].next_token, "tok/2==");
    CU_ASSERT_FALSE(pg[1].truncated);
    retain_obj_t objs[4];
    size_t n = 0;
    for (int p = 0; p < 2; p++)
        for (size_t i = 0; i < pg[p].n; i++)
            objs[n] = (retain_obj_t){.key = pg[p].keys[i], .complete = 1, .ref = n}, n++;
    CU_ASSERT_EQUAL_FATAL(n, 4);
    char got[512], err[128];
    /* LastModified says 02 is the newest (a copy rewrote it): the names say 03. */
    CU_ASSERT_EQUAL(retain_decide("p", objs, n, 2, "p/20261204T140000Z.rdb", err, sizeof err), 2);
    describe(objs, n, got, sizeof got);
    CU_ASSERT_STRING_EQUAL(got, "p/20261203T140000Z.rdb=K p/20261202T140000Z.rdb=D p/20261201T140000Z.rdb=D "
                                "p/README=F");
    s3_list_page_free(&pg[0]);
    s3_list_page_free(&pg[1]);
}

/* ---- --termination-log ---- */

static size_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (size_t)st.st_size : (size_t)-1;
}

static void test_termination_log(void)
{
    char dir[256], path[300], err[512], buf[5000];
    CU_ASSERT_FATAL(tmpdir_make(dir, sizeof dir, "test_backup_retain") == 0);
    snprintf(path, sizeof path, "%s/termination-log", dir);
    memset(buf, 'x', sizeof buf);
    CU_ASSERT_EQUAL(backup_write_termination_log(path, buf, sizeof buf, err, sizeof err), 0);
    CU_ASSERT_EQUAL(file_size(path), BACKUP_TERMINATION_LOG_MAX); /* cut at Kubernetes' limit */
    /* What the file held before is replaced, not appended to or left at its end. */
    static const char line[] = "{\"result\":\"ok\"}\n";
    CU_ASSERT_EQUAL(backup_write_termination_log(path, line, sizeof line - 1, err, sizeof err), 0);
    char got[64] = "";
    int fd = open(path, O_RDONLY);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_EQUAL(read(fd, got, sizeof got - 1), (ssize_t)(sizeof line - 1));
    close(fd);
    CU_ASSERT_STRING_EQUAL(got, line);
    snprintf(path, sizeof path, "%s/nodir/termination-log", dir);
    CU_ASSERT_EQUAL(backup_write_termination_log(path, line, sizeof line - 1, err, sizeof err), -1);
    char want[400];
    snprintf(want, sizeof want, "--termination-log %s: No such file or directory", path);
    CU_ASSERT_STRING_EQUAL(err, want);
    tmpdir_remove(dir);
}

static const cu_entry_t tests[] = {
    CU_SUITE("backup names"),
    {"a time's key and back; edge dates", test_key_name_round_trip},
    {"keys that are not ours by name", test_key_time_refused},
    {"the prefix normalised; empty, rooted and too long refused", test_prefix_norm},
    CU_SUITE("retention"),
    {"the keep decision as a table", test_decide_table},
    {"keep 0 refused, nothing decided", test_keep_zero_refused},
    {"a listing in two pages decided as one, by name not LastModified", test_paged_listing},
    CU_SUITE("termination log"),
    {"--termination-log: replaced, cut at 4096 bytes, a failure names the file", test_termination_log},
};
CU_MAIN(tests)
