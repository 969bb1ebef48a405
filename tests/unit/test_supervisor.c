/* Unit tests of the supervisor: restart policy, metric merging and the workers' key files
 * as pure functions, and the real supervisor binary running fake children (shell
 * scripts) through start, readiness, crash and restart, pool resizing, `ctl status`
 * listing every key a worker holds, and an orderly SIGTERM drain. */
#include "clock.h"
#include "cu_table.h"
#include "keyfile.h"
#include "merge.h"
#include "policy.h"
#include "procstat.h"
#include "text_assert.h"
#include "text_case.h"
#include "tmpdir.h"

#include <CUnit/CUnit.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define S(x) ((int64_t)(x) * NS_PER_SEC)

static void test_restart_backoff(void)
{
    policy_restart_t p = {0};
    int64_t t = S(100);
    /* Quick exits in a row: 1, 2, 4, ... capped at 60 s. */
    int64_t expect[] = {1, 2, 4, 8, 16, 32, 60, 60};
    for (size_t i = 0; i < sizeof(expect) / sizeof(expect[0]); i++) {
        int64_t d = policy_on_exit(&p, t, t + S(1));
        CU_ASSERT_EQUAL(d, S(expect[i]));
        t += S(1) + d;
    }
    CU_ASSERT(policy_crashlooping(&p));
    CU_ASSERT_EQUAL(p.restarts_total, 8);
    /* Ten minutes up resets the streak. */
    CU_ASSERT_EQUAL(policy_on_exit(&p, t, t + S(600)), S(1));
    CU_ASSERT(!policy_crashlooping(&p));
    CU_ASSERT_EQUAL(policy_on_exit(&p, t, t + S(599)), S(2));
}

static void test_describe_status(void)
{
    char out[96];
    CU_ASSERT_STRING_EQUAL(policy_describe_status(3 << 8, out, sizeof(out)), "exited with code 3");
    CU_ASSERT_STRING_EQUAL(policy_describe_status(SIGKILL, out, sizeof(out)),
                           "killed by signal 9 (SIGKILL)");
    CU_ASSERT_STRING_EQUAL(policy_describe_status(SIGSEGV | 0x80, out, sizeof(out)),
                           "killed by signal 11 (SIGSEGV), core dumped");
}

static void test_merge_groups_families(void)
{
    merge_t *m = merge_new();
    const char *w1 = "# HELP controller_runtime_reconcile_total Total reconciliations\n"
                     "# TYPE controller_runtime_reconcile_total counter\n"
                     "controller_runtime_reconcile_total{controller=\"rediscluster\",result=\"success\"} 4\n"
                     "# TYPE workqueue_depth gauge\n"
                     "workqueue_depth 2\n";
    const char *w2 = "# HELP controller_runtime_reconcile_total Total reconciliations\n"
                     "# TYPE controller_runtime_reconcile_total counter\n"
                     "controller_runtime_reconcile_total{controller=\"rediscluster\",result=\"success\"} 6\n"
                     "# TYPE lat histogram\n"
                     "lat_bucket{le=\"1\"} 1\nlat_bucket{le=\"+Inf\"} 2\nlat_sum 3.5\nlat_count 2\n"
                     "garbage line without value\n"
                     "cut_short{a=\"b\"} 1"; /* no newline: maybe cut, skipped */
    CU_ASSERT_EQUAL(merge_add(m, "workerd-1", w1, strlen(w1)), 0);
    CU_ASSERT_EQUAL(merge_add(m, "workerd-2", w2, strlen(w2)), 0);
    const char *own = "process_cpu_seconds_total{child=\"supervisor\"} 1\n";
    CU_ASSERT_EQUAL(merge_add(m, "supervisor", own, strlen(own)), 0);
    buf_t out;
    buf_init(&out, 0);
    CU_ASSERT_EQUAL(merge_render(m, &out), 0);
    const char *t = buf_str(&out);
    /* One HELP/TYPE block for the shared family, both workers' samples under it. */
    const char *block =
        "# HELP controller_runtime_reconcile_total Total reconciliations\n"
        "# TYPE controller_runtime_reconcile_total counter\n"
        "controller_runtime_reconcile_total{child=\"workerd-1\",controller=\"rediscluster\",result=\"success\"} 4\n"
        "controller_runtime_reconcile_total{child=\"workerd-2\",controller=\"rediscluster\",result=\"success\"} 6\n";
    CU_ASSERT_PTR_NOT_NULL(strstr(t, block));
    ASSERT_TEXT_HAS(t, "workqueue_depth{child=\"workerd-1\"} 2\n",
                    "# TYPE lat histogram\nlat_bucket{child=\"workerd-2\",le=\"1\"} 1\n",
                    "lat_sum{child=\"workerd-2\"} 3.5\nlat_count{child=\"workerd-2\"} 2\n",
                    "process_cpu_seconds_total{child=\"supervisor\"} 1\n");
    CU_ASSERT_PTR_NULL(strstr(t, "cut_short"));
    CU_ASSERT_PTR_NULL(strstr(t, "garbage"));
    /* Only one TYPE line per family in the whole exposition. */
    const char *first = strstr(t, "# TYPE controller_runtime_reconcile_total");
    CU_ASSERT_PTR_NULL(strstr(first + 1, "# TYPE controller_runtime_reconcile_total"));
    buf_free(&out);
    merge_destroy(&m);
    CU_ASSERT_PTR_NULL(m);
}

/* The key file a worker writes and `ctl status` reads: every key with its age, in order;
 * a line without a time has no age; nothing odd breaks the reading. */
static void test_keyfile(void)
{
    buf_t b;
    buf_init(&b, 0);
    CU_ASSERT_EQUAL(keyfile_append(&b, "ns-a/one", 1000000), 0);
    CU_ASSERT_EQUAL(keyfile_append(&b, "ns-b/two", 1002500), 0);
    CU_ASSERT_EQUAL(keyfile_append(&b, "bad\tkey", 1), -1);
    CU_ASSERT_EQUAL(keyfile_append(&b, "bad\nkey", 1), -1);
    CU_ASSERT_STRING_EQUAL(buf_str(&b), "ns-a/one\t1000000\nns-b/two\t1002500\n");
    json_object *k = keyfile_parse(buf_str(&b), 1003000);
    CU_ASSERT_STRING_EQUAL(json_object_to_json_string_ext(k, JSON_C_TO_STRING_PLAIN),
                           "[{\"key\":\"ns-a\\/one\",\"age_s\":3.0},{\"key\":\"ns-b\\/two\",\"age_s\":0.5}]");
    json_object_put(k);
    static const text_case_t cases[] = {
        {"", "[]"},
        {NULL, "[]"},
        {"\n\n", "[]"},
        {"old/format", "[{\"key\":\"old\\/format\",\"age_s\":null}]"},
        {"a/b\t2000\n\nc/d\t999999999", "[{\"key\":\"a\\/b\",\"age_s\":1.0},{\"key\":\"c\\/d\",\"age_s\":0.0}]"},
        {"a/b\tsoon\nc/d\t-5\n", "[{\"key\":\"a\\/b\",\"age_s\":null},{\"key\":\"c\\/d\",\"age_s\":null}]"},
        {"\t1000\n", "[]"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        k = keyfile_parse(cases[i].in, 3000);
        CU_ASSERT_PTR_NOT_NULL_FATAL(k);
        const char *got = json_object_to_json_string_ext(k, JSON_C_TO_STRING_PLAIN);
        if (strcmp(got, cases[i].want))
            fprintf(stderr, "case %zu: got %s, want %s\n", i, got, cases[i].want);
        CU_ASSERT_STRING_EQUAL(got, cases[i].want);
        json_object_put(k);
    }
    buf_free(&b);
}

/* ---- the real binary with fake children ---- */

static char tmpdir[] = "/tmp/rdc-sup-test-XXXXXX";
static char supervisor_bin[PATH_MAX];

static void write_fake(const char *name)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/bin/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    /* A child that is ready at once, records its pid, and drains on SIGTERM. */
    fprintf(f, "#!/bin/bash\n"
               "trap 'echo stopped >> %s/$RDC_CHILD_NAME.log; exit 0' TERM\n"
               "echo $$ > %s/$RDC_CHILD_NAME.pid\n"
               "echo started >> %s/$RDC_CHILD_NAME.log\n"
               "[ -n \"$RDC_NOTIFY_FD\" ] && echo READY >&$RDC_NOTIFY_FD && eval \"exec $RDC_NOTIFY_FD>&-\"\n"
               "while :; do sleep 0.1; done\n",
            tmpdir, tmpdir, tmpdir);
    fclose(f);
    chmod(path, 0755);
}

static int count_lines(const char *child, const char *word)
{
    char path[PATH_MAX], line[64];
    snprintf(path, sizeof(path), "%s/%s.log", tmpdir, child);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int n = 0;
    while (fgets(line, sizeof(line), f))
        n += strncmp(line, word, strlen(word)) == 0;
    fclose(f);
    return n;
}

static pid_t read_pid(const char *child)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s.pid", tmpdir, child);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    long pid = 0;
    char line[32];
    if (fgets(line, sizeof(line), f))
        pid = strtol(line, NULL, 10);
    fclose(f);
    return (pid_t)pid;
}

/* Wait up to ms for cond() to hold, polling. */
static int wait_for(int (*cond)(void), int ms)
{
    for (int i = 0; i < ms / 50; i++) {
        if (cond())
            return 1;
        usleep(50000);
    }
    return cond();
}

static int all_started(void)
{
    return count_lines("electord", "started") == 1 && count_lines("informerd", "started") == 1 &&
           count_lines("workerd-1", "started") >= 1 && count_lines("workerd-2", "started") == 1;
}
static pid_t g_sup;


static int worker1_restarted(void) { return count_lines("workerd-1", "started") == 2; }
static int worker3_started(void) { return count_lines("workerd-3", "started") == 1; }
static int worker3_stopped(void) { return count_lines("workerd-3", "stopped") == 1; }

/* `supervisor ctl a [b]`, its output into out_path (NULL: /dev/null); the exit code. */
static int run_ctl_to(const char *a, const char *b, const char *out_path)
{
    char rt[PATH_MAX];
    snprintf(rt, sizeof(rt), "--runtime-dir=%s/rt", tmpdir);
    pid_t pid = fork();
    if (pid == 0) {
        int devnull = open(out_path ? out_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(devnull, 1);
        execl(supervisor_bin, "supervisor", rt, "ctl", a, b, (char *)NULL);
        _exit(127);
    }
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int run_ctl(const char *a, const char *b)
{
    return run_ctl_to(a, b, NULL);
}

/* `ctl status` lists every key a worker holds (its key file, common/keyfile.h), each with
 * how long it has held it: the first on the worker's row, the others each on a line of
 * their own below it. */
static void check_status_lists_keys(void)
{
    char path[PATH_MAX], out[PATH_MAX];
    snprintf(path, sizeof(path), "%s/rt/metrics", tmpdir);
    mkdir(path, 0700);
    snprintf(path, sizeof(path), "%s/rt/metrics/workerd-2.key", tmpdir);
    buf_t b;
    buf_init(&b, 0);
    int64_t now = clock_wall_ns() / NS_PER_MS;
    keyfile_append(&b, "ns-a/one", now - 3000);
    keyfile_append(&b, "ns-b/two", now - 500);
    keyfile_append(&b, "ns-c/three", now - 12000);
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(buf_str(&b), f);
    fclose(f);
    buf_free(&b);
    snprintf(out, sizeof(out), "%s/status.out", tmpdir);
    CU_ASSERT_EQUAL(run_ctl_to("status", NULL, out), 0);
    f = fopen(out, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    char text[4096];
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    text[n] = '\0';
    fclose(f);
    const char *row = strstr(text, "\nworkerd-2 ");
    CU_ASSERT_PTR_NOT_NULL_FATAL(row);
    const char *eol = strchr(row + 1, '\n');
    CU_ASSERT_PTR_NOT_NULL_FATAL(eol);
    /* the first key on the row, then one line each, in the worker's order */
    const char *one = strstr(row, " ns-a/one (3."), *two = strstr(row, "\n  "), *three = strstr(row, "ns-c/three (12.");
    CU_ASSERT(one && one < eol);
    CU_ASSERT(two && two == eol && strstr(eol, "ns-b/two (0.") == eol + 1 + strspn(eol + 1, " "));
    CU_ASSERT(three && three > eol);
    CU_ASSERT(strstr(text, "KEYS") != NULL);
    /* a worker holding nothing: its row ends after RESTARTS */
    const char *w1 = strstr(text, "\nworkerd-1 "), *w1_end = w1 ? strchr(w1 + 1, '\n') : NULL;
    const char *w1_key = w1 ? strstr(w1, "ns-") : NULL;
    CU_ASSERT(w1 && w1_end && (!w1_key || w1_key > w1_end));
    if (!one || !three)
        fprintf(stderr, "ctl status said:\n%s", text);
    unlink(path);
}

static void test_process_lifecycle(void)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    CU_ASSERT_FATAL(n > 0);
    self[n] = '\0';
    snprintf(supervisor_bin, sizeof(supervisor_bin), "%s/../bin/supervisor", dirname(self));
    if (access(supervisor_bin, X_OK) != 0) {
        CU_FAIL("build/bin/supervisor is missing: run make first");
        return;
    }
    CU_ASSERT_FATAL(mkdtemp(tmpdir) != NULL);
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/bin", tmpdir);
    mkdir(path, 0700);
    write_fake("electord");
    write_fake("informerd");
    write_fake("workerd");

    pid_t sup = fork();
    if (sup == 0) {
        char bindir[PATH_MAX], rt[PATH_MAX], logp[PATH_MAX];
        snprintf(bindir, sizeof(bindir), "--bindir=%s/bin", tmpdir);
        snprintf(rt, sizeof(rt), "--runtime-dir=%s/rt", tmpdir);
        snprintf(logp, sizeof(logp), "%s/supervisor.log", tmpdir);
        FILE *lf = freopen(logp, "w", stderr);
        (void)lf;
        execl(supervisor_bin, "supervisor", bindir, rt, "--workers=2",
              "--metrics-bind-address=127.0.0.1:0", "--health-probe-bind-address=127.0.0.1:0",
              "--graceful-shutdown-timeout=5s", (char *)NULL);
        _exit(127);
    }
    g_sup = sup;
    CU_ASSERT_FATAL(wait_for(all_started, 5000));

    /* Like the real daemons, the fakes close their readiness pipe after READY; the
     * supervisor must then close its end too, or the pipe at EOF left in its poll set
     * makes the loop spin (found by the benchmarks). Idle, it uses next to no CPU. */
    usleep(300000);
    double rss, cpu0 = 0, cpu1 = 0; /* user + system CPU seconds of the supervisor */
    CU_ASSERT_EQUAL(procstat_read(g_sup, &rss, &cpu0), 0);
    usleep(1000000);
    CU_ASSERT_EQUAL(procstat_read(g_sup, &rss, &cpu1), 0);
    CU_ASSERT((cpu1 - cpu0) * (double)sysconf(_SC_CLK_TCK) < 19.5); /* under 20 clock ticks */

    /* A worker killed mid-flight is restarted after the 1 s backoff; others untouched. */
    pid_t w1 = read_pid("workerd-1");
    CU_ASSERT_FATAL(w1 > 0);
    kill(w1, SIGKILL);
    CU_ASSERT(wait_for(worker1_restarted, 4000));
    CU_ASSERT_EQUAL(count_lines("workerd-2", "started"), 1);
    CU_ASSERT_EQUAL(count_lines("informerd", "started"), 1);

    /* Pool resize up and down through the control socket. */
    CU_ASSERT_EQUAL(run_ctl("workers", "3"), 0);
    CU_ASSERT(wait_for(worker3_started, 3000));
    CU_ASSERT_EQUAL(run_ctl("workers", "2"), 0);
    CU_ASSERT(wait_for(worker3_stopped, 3000));
    CU_ASSERT_EQUAL(run_ctl("workers", "many"), 1);
    CU_ASSERT_EQUAL(run_ctl("status", NULL), 0);
    check_status_lists_keys();

    /* SIGTERM drains everything (each child sees TERM) and exits 0. */
    kill(sup, SIGTERM);
    int status = 0;
    for (int i = 0; i < 100 && waitpid(sup, &status, WNOHANG) == 0; i++)
        usleep(100000);
    CU_ASSERT(WIFEXITED(status));
    CU_ASSERT_EQUAL(WEXITSTATUS(status), 0);
    CU_ASSERT_EQUAL(count_lines("electord", "stopped"), 1);
    CU_ASSERT_EQUAL(count_lines("informerd", "stopped"), 1);
    CU_ASSERT_EQUAL(count_lines("workerd-2", "stopped"), 1);
    CU_ASSERT_EQUAL(tmpdir_remove(tmpdir), 0);
}

static const cu_entry_t tests[] = {
    CU_SUITE("policy"),
    {"restart backoff 1 s doubling to 60 s, reset after 10 min", test_restart_backoff},
    {"exit status descriptions", test_describe_status},
    CU_SUITE("merge"),
    {"families grouped, child label added", test_merge_groups_families},
    CU_SUITE("keyfile"),
    {"a worker's held keys and their ages", test_keyfile},
    CU_SUITE("process"),
    {"start, crash restart, resize, drain", test_process_lifecycle},
};

CU_MAIN(tests)
