/* Unit tests of what a first run meets: --help (the flags a daemon uses, defaults as they
 * were before parsing, Go-style durations), the runtime directory's checks (no symbolic
 * link, ours, mode 0700) and the supervisor's choice of a free one, the type of the
 * process metrics, and the bound address of an HTTP endpoint given as port 0. */
#include "cu_table.h"
#include "daemon.h"
#include "httpd.h"
#include "metrics.h"
#include "metrics_text.h"
#include "opts.h"
#include "procstat.h"
#include "text_assert.h"
#include "rundir.h"
#include "tmpdir.h"

#include <CUnit/CUnit.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- opts ----------------------------------------------------------------------------- */

static void test_go_durations(void)
{
    static const struct {
        double s;
        const char *want;
    } cases[] = {
        {0, "0s"},          {1e-9, "1ns"},         {999e-9, "999ns"},
        {1.5e-6, "1.5\u00b5s"}, {0.0015, "1.5ms"}, {0.5, "500ms"},
        {1, "1s"},          {1.5, "1.5s"},         {2, "2s"},
        {15, "15s"},        {30, "30s"},           {59.999, "59.999s"},
        {60, "1m0s"},       {90, "1m30s"},         {120, "2m0s"},
        {3600, "1h0m0s"},   {36000, "10h0m0s"},    {3723.5, "1h2m3.5s"},
        {86400, "24h0m0s"}, {-90, "-1m30s"},
    };
    char out[64];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        opts_format_duration(cases[i].s, out, sizeof(out));
        if (strcmp(out, cases[i].want) != 0)
            fprintf(stderr, "\n  %g s: got \"%s\", want \"%s\"\n", cases[i].s, out, cases[i].want);
        CU_ASSERT_STRING_EQUAL(out, cases[i].want);
        /* What we print parses back to the same value (Go's round trip). */
        double back = -1;
        if (cases[i].s >= 0 && strstr(out, "\u00b5") == NULL) {
            CU_ASSERT_EQUAL(opts_parse_duration(out, &back), 0);
            CU_ASSERT_DOUBLE_EQUAL(back, cases[i].s, 1e-9);
        }
    }
    /* A buffer too small is cut, never overrun. */
    char tiny[4];
    opts_format_duration(36000, tiny, sizeof(tiny));
    CU_ASSERT_EQUAL(strlen(tiny), 3);
}

/* Usage of table into a string (caller frees). */
static char *usage_of(const opt_t *table)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    opts_usage(m, "prog", "summary", table);
    fclose(m);
    return text;
}

static void test_select_unlists_but_accepts(void)
{
    rdc_common_opts_t c;
    opts_common_defaults(&c);
    int own = 0;
    const opt_t own_flags[] = {
        {"own-flag", OPT_BOOL, &own, "a flag of the daemon"},
        {NULL, OPT_END, NULL, NULL},
    };
    opt_t table[OPTS_JOINED_LEN(own_flags)];
    opts_common_join(&c, own_flags, table);
    opts_common_select(table, "kubeconfig,log-level,sync-period");
    char *u = usage_of(table);
    ASSERT_TEXT_HAS(u, "  --kubeconfig string\n", "  --log-level string\n", "  --own-flag\n", "  --help\n",
                    "  --version\n");
    ASSERT_TEXT_LACKS(u, "--workers", "--metrics-bind-address", "--leader-elect");
    /* Go-style default for 10 h, not "36000s". */
    ASSERT_TEXT_HAS(u, "(default 10h0m0s)");
    ASSERT_TEXT_LACKS(u, "36000");
    free(u);
    /* Unlisted flags are still accepted: the supervisor passes every shared flag on. */
    char *argv[] = {"prog", "--workers=7", "--metrics-bind-address", "0", "--leader-elect"};
    char err[256] = "";
    CU_ASSERT_EQUAL(opts_parse(table, 5, argv, NULL, 0, NULL, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(c.workers, 7);
    CU_ASSERT_EQUAL(c.leader_elect, 1);
}

static void test_runtime_dir_help_names_the_real_default(void)
{
    rdc_common_opts_t c;
    opts_common_defaults(&c);
    opt_t table[OPTS_COMMON_COUNT + 1];
    char *saved = getenv("XDG_RUNTIME_DIR") ? strdup(getenv("XDG_RUNTIME_DIR")) : NULL;
    setenv("XDG_RUNTIME_DIR", "/run/user/4242", 1);
    opts_common_fill(&c, table);
    table[OPTS_COMMON_COUNT] = (opt_t){NULL, OPT_END, NULL, NULL};
    char *u = usage_of(table);
    CU_ASSERT_PTR_NOT_NULL(strstr(u, "here \"/run/user/4242/rdc-operator\""));
    free(u);
    char def[256];
    CU_ASSERT_STRING_EQUAL(opts_default_runtime_dir(def, sizeof(def)), "/run/user/4242/rdc-operator");
    unsetenv("XDG_RUNTIME_DIR");
    char want[64];
    snprintf(want, sizeof(want), "/tmp/rdc-operator-%u", (unsigned)getuid());
    CU_ASSERT_STRING_EQUAL(opts_default_runtime_dir(def, sizeof(def)), want);
    if (saved)
        setenv("XDG_RUNTIME_DIR", saved, 1);
    free(saved);
}

/* Path of a built daemon next to the unit tests (build/tests/ -> build/bin/). */
static void bin_path(const char *name, char *out, size_t len)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    CU_ASSERT_FATAL(n > 0);
    self[n] = '\0';
    snprintf(out, len, "%s/../bin/%s", dirname(self), name);
}

/* Run "<bin> <args>" and return its stdout (caller frees), or NULL. */
static char *run_help(const char *name, const char *args, int *status)
{
    char bin[PATH_MAX], cmd[PATH_MAX + 256];
    bin_path(name, bin, sizeof(bin));
    if (access(bin, X_OK) != 0) {
        CU_FAIL("a daemon binary is missing: run make first");
        return NULL;
    }
    snprintf(cmd, sizeof(cmd), "'%s' %s 2>&1", bin, args);
    FILE *p = popen(cmd, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    char chunk[4096];
    size_t k;
    while ((k = fread(chunk, 1, sizeof(chunk), p)) > 0)
        fwrite(chunk, 1, k, m);
    fclose(m);
    *status = pclose(p);
    return text;
}

/* What a daemon's --help must say and must not say (lists end at the first NULL). */
static const struct {
    const char *daemon, *args;
    const char *has[4], *lacks[6];
} help_cases[] = {
    /* --help given last, after other flags: the defaults are still the defaults. */
    {"supervisor", "--workers 5 --sync-period 1m --leader-elect --help",
     {"--sync-period duration", "(default 10h0m0s)", "number of reconcile workers (default 2)\n"},
     {"only one replica acts at a time (default true)", "print this help and exit (default true)", "36000s"}},
    /* electord lists only the flags it uses ... */
    {"electord", "--help",
     {"  --leader-elect\n", "  --leader-election-lease-duration duration\n", "  --kubeconfig string\n"},
     {"--workers", "--sync-period", "--metrics-bind-address", "--namespace ", "(default true)"}},
    /* ... and still accepts the others, as the supervisor passes them. */
    {"electord", "--workers 3 --sync-period 1h --metrics-bind-address=0 --help", {NULL}, {NULL}},
};

static void test_daemon_help(void)
{
    for (size_t i = 0; i < sizeof(help_cases) / sizeof(help_cases[0]); i++) {
        int st = -1;
        char *u = run_help(help_cases[i].daemon, help_cases[i].args, &st);
        if (!u)
            return;
        CU_ASSERT_EQUAL(st, 0);
        text_assert_each(u, help_cases[i].has, 1);
        text_assert_each(u, help_cases[i].lacks, 0);
        free(u);
    }
}

/* ---- runtime directory ----------------------------------------------------------------- */

static void test_runtime_dir_check_table(void)
{
    static const struct {
        mode_t mode;
        int other_uid;
        int ok;
        const char *says;
    } cases[] = {
        {S_IFDIR | 0700, 0, 1, NULL},
        {S_IFDIR | S_ISGID | 0700, 0, 1, NULL}, /* an fsGroup volume's subdirectory */
        {S_IFDIR | 0755, 0, 0, "has mode 0755, not 0700"},
        {S_IFDIR | 0770, 0, 0, "has mode 0770, not 0700"},
        {S_IFDIR | 0500, 0, 0, "has mode 0500, not 0700"},
        {S_IFDIR | 01777, 0, 0, "has mode 0777, not 0700"},
        {S_IFDIR | 0700, 1, 0, "is owned by uid"},
        {S_IFLNK | 0777, 0, 0, "is a symbolic link"},
        {S_IFREG | 0600, 0, 0, "is not a directory"},
        {S_IFSOCK | 0700, 0, 0, "is not a directory"},
    };
    uid_t me = getuid();
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct stat st;
        memset(&st, 0, sizeof(st));
        st.st_mode = cases[i].mode;
        st.st_uid = cases[i].other_uid ? me + 1 : me;
        char err[512] = "";
        int rc = daemon_runtime_dir_check("/x/rt", &st, me, err, sizeof(err));
        CU_ASSERT_EQUAL(rc, cases[i].ok ? 0 : -1);
        if (!cases[i].ok) {
            CU_ASSERT_PTR_NOT_NULL(strstr(err, "runtime directory /x/rt "));
            CU_ASSERT_PTR_NOT_NULL(strstr(err, cases[i].says));
        }
    }
}

static char tmpdir[] = "/tmp/rdc-unit-firstrun.XXXXXX";

static int mode_of(const char *path)
{
    struct stat st;
    return lstat(path, &st) ? -1 : (int)(st.st_mode & 07777);
}

static void test_runtime_dir_on_disk(void)
{
    CU_ASSERT_FATAL(mkdtemp(tmpdir) != NULL);
    char p[256], q[512], out[4096], err[1024];
    /* Created with 0700 even under a umask that would take bits. */
    mode_t old = umask(0277);
    snprintf(p, sizeof(p), "%s/new", tmpdir);
    CU_ASSERT_EQUAL(daemon_runtime_dir(p, out, sizeof(out), err, sizeof(err)), 0);
    umask(old);
    CU_ASSERT_STRING_EQUAL(out, p);
    CU_ASSERT_EQUAL(mode_of(p), 0700);
    snprintf(q, sizeof(q), "%s/metrics", p);
    CU_ASSERT_EQUAL(mode_of(q), 0700);
    /* Used again as it is. */
    CU_ASSERT_EQUAL(daemon_runtime_dir(p, out, sizeof(out), err, sizeof(err)), 0);

    /* An existing directory open to others is refused, and left as it was. */
    snprintf(p, sizeof(p), "%s/open", tmpdir);
    CU_ASSERT_EQUAL(mkdir(p, 0700), 0);
    CU_ASSERT_EQUAL(chmod(p, 0755), 0);
    err[0] = '\0';
    CU_ASSERT_EQUAL(daemon_runtime_dir(p, out, sizeof(out), err, sizeof(err)), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, p));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "has mode 0755, not 0700"));
    CU_ASSERT_EQUAL(mode_of(p), 0755);

    /* A symbolic link to a good directory is refused (it is not followed). */
    snprintf(p, sizeof(p), "%s/good", tmpdir);
    CU_ASSERT_EQUAL(mkdir(p, 0700), 0);
    snprintf(q, sizeof(q), "%s/link", tmpdir);
    CU_ASSERT_EQUAL(symlink(p, q), 0);
    err[0] = '\0';
    CU_ASSERT_EQUAL(daemon_runtime_dir(q, out, sizeof(out), err, sizeof(err)), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "is a symbolic link"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, q));

    /* So is a dangling one (mkdir would fail with EEXIST and stat would say ENOENT). */
    snprintf(q, sizeof(q), "%s/dangling", tmpdir);
    CU_ASSERT_EQUAL(symlink("/nonexistent/rdc", q), 0);
    err[0] = '\0';
    CU_ASSERT_EQUAL(daemon_runtime_dir(q, out, sizeof(out), err, sizeof(err)), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "is a symbolic link"));

    /* A file. */
    snprintf(p, sizeof(p), "%s/file", tmpdir);
    FILE *f = fopen(p, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fclose(f);
    err[0] = '\0';
    CU_ASSERT_EQUAL(daemon_runtime_dir(p, out, sizeof(out), err, sizeof(err)), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "is not a directory"));

    /* The metrics/ subdirectory gets the same checks. */
    snprintf(p, sizeof(p), "%s/sub", tmpdir);
    CU_ASSERT_EQUAL(mkdir(p, 0700), 0);
    snprintf(q, sizeof(q), "%s/sub/metrics", tmpdir);
    CU_ASSERT_EQUAL(symlink("/tmp", q), 0);
    err[0] = '\0';
    CU_ASSERT_EQUAL(daemon_runtime_dir(p, out, sizeof(out), err, sizeof(err)), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "sub/metrics is a symbolic link"));
}

static void test_rundir_candidates(void)
{
    char out[64];
    CU_ASSERT_EQUAL(rundir_candidate("/run/x/rdc-operator", 0, out, sizeof(out)), 0);
    CU_ASSERT_STRING_EQUAL(out, "/run/x/rdc-operator");
    CU_ASSERT_EQUAL(rundir_candidate("/run/x/rdc-operator", 1, out, sizeof(out)), 0);
    CU_ASSERT_STRING_EQUAL(out, "/run/x/rdc-operator-2");
    CU_ASSERT_EQUAL(rundir_candidate("/run/x/rdc-operator", 15, out, sizeof(out)), 0);
    CU_ASSERT_STRING_EQUAL(out, "/run/x/rdc-operator-16");
    char small[8];
    CU_ASSERT_EQUAL(rundir_candidate("/run/x/rdc-operator", 1, small, sizeof(small)), -1);
    CU_ASSERT_STRING_EQUAL(small, "");
}

static void test_rundir_picks_a_free_one(void)
{
    char xdg[600], base[700], out[4096], err[2048];
    snprintf(xdg, sizeof(xdg), "%s/xdg", tmpdir);
    CU_ASSERT_EQUAL_FATAL(mkdir(xdg, 0700), 0);
    char *saved = getenv("XDG_RUNTIME_DIR") ? strdup(getenv("XDG_RUNTIME_DIR")) : NULL;
    setenv("XDG_RUNTIME_DIR", xdg, 1);
    snprintf(base, sizeof(base), "%s/rdc-operator", xdg);

    int fb = -1;
    int a = rundir_acquire(NULL, out, sizeof(out), &fb, err, sizeof(err));
    CU_ASSERT_FATAL(a >= 0);
    CU_ASSERT_STRING_EQUAL(out, base);
    CU_ASSERT_EQUAL(fb, 0);
    CU_ASSERT_EQUAL(rundir_holder(base), (long)getpid());

    /* The default is held (flock: a second open file description conflicts even in one
     * process): the next free candidate is taken. */
    int b = rundir_acquire(NULL, out, sizeof(out), &fb, err, sizeof(err));
    CU_ASSERT_FATAL(b >= 0);
    char want[800];
    snprintf(want, sizeof(want), "%s-2", base);
    CU_ASSERT_STRING_EQUAL(out, want);
    CU_ASSERT_EQUAL(fb, 1);
    CU_ASSERT_EQUAL(mode_of(want), 0700);

    /* Given explicitly, a held directory is an error naming the holder and the way out. */
    err[0] = '\0';
    CU_ASSERT_EQUAL(rundir_acquire(base, out, sizeof(out), &fb, err, sizeof(err)), -1);
    char pid[32];
    snprintf(pid, sizeof(pid), "pid %ld", (long)getpid());
    CU_ASSERT_PTR_NOT_NULL(strstr(err, pid));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, base));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "--runtime-dir"));

    /* Released: the default is free again (the lock file stays). */
    close(a);
    int c = rundir_acquire(NULL, out, sizeof(out), &fb, err, sizeof(err));
    CU_ASSERT(c >= 0);
    CU_ASSERT_STRING_EQUAL(out, base);
    CU_ASSERT_EQUAL(fb, 0);

    /* A default that is not ours to use ends the search with its problem, no fallback. */
    close(c);
    close(b);
    CU_ASSERT_EQUAL(chmod(base, 0755), 0);
    err[0] = '\0';
    CU_ASSERT_EQUAL(rundir_acquire(NULL, out, sizeof(out), &fb, err, sizeof(err)), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "has mode 0755"));
    chmod(base, 0700);

    /* Every candidate held: the message lists them. */
    int fds[RUNDIR_CANDIDATES];
    int n = 0;
    for (; n < RUNDIR_CANDIDATES; n++) {
        fds[n] = rundir_acquire(NULL, out, sizeof(out), &fb, err, sizeof(err));
        if (fds[n] < 0)
            break;
    }
    CU_ASSERT_EQUAL(n, RUNDIR_CANDIDATES);
    err[0] = '\0';
    CU_ASSERT_EQUAL(rundir_acquire(NULL, out, sizeof(out), &fb, err, sizeof(err)), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "every default runtime directory has a supervisor"));
    for (int i = 0; i < n; i++)
        close(fds[i]);

    if (saved)
        setenv("XDG_RUNTIME_DIR", saved, 1);
    else
        unsetenv("XDG_RUNTIME_DIR");
    free(saved);
    CU_ASSERT_EQUAL(tmpdir_remove(tmpdir), 0);
}

/* ---- metrics and endpoints -------------------------------------------------------------- */

static void test_process_metric_types(void)
{
    metrics_registry_t *r = metrics_registry_new();
    metric_family_t *rss = NULL, *cpu = NULL;
    procstat_families(r, &rss, &cpu);
    CU_ASSERT_PTR_NOT_NULL_FATAL(rss);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cpu);
    double b = 0, s = -1;
    CU_ASSERT_EQUAL(procstat_read(getpid(), &b, &s), 0);
    CU_ASSERT(b > 1024 * 1024);
    CU_ASSERT(s >= 0);
    metric_gauge_set(rss, METRIC_LABELS("supervisor"), b);
    metric_counter_add(cpu, METRIC_LABELS("supervisor"), s);
    char *text = exposition_of(r);
    ASSERT_TEXT_HAS(text, "# TYPE process_cpu_seconds_total counter\n",
                    "# TYPE process_resident_memory_bytes gauge\n");
    free(text);
    CU_ASSERT_EQUAL(procstat_read(0, &b, &s), -1); /* no /proc/0 */
    metrics_registry_destroy(&r);
}

static int ok_handler(const char *path, buf_t *body, void *user)
{
    (void)path;
    (void)user;
    buf_puts(body, "ok\n");
    return 200;
}

static void test_bound_address(void)
{
    httpd_t *h = NULL;
    char err[256], addr[64];
    CU_ASSERT_EQUAL_FATAL(httpd_new("127.0.0.1:0", ok_handler, NULL, &h, err, sizeof(err)), 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    CU_ASSERT(httpd_port(h) > 0);
    char want[64];
    snprintf(want, sizeof(want), "127.0.0.1:%d", httpd_port(h));
    CU_ASSERT_STRING_EQUAL(httpd_bound_addr(h, addr, sizeof(addr)), want);
    httpd_destroy(&h);
    /* ":port" means every interface (an empty host): parsed, not bound, since the tests
     * bind 127.0.0.1 only */
    char host[64] = "x";
    int port = -1;
    CU_ASSERT_EQUAL(httpd_parse_addr(":8081", host, sizeof(host), &port), 0);
    CU_ASSERT_STRING_EQUAL(host, "");
    CU_ASSERT_EQUAL(port, 8081);
    CU_ASSERT_EQUAL(httpd_parse_addr("127.0.0.1:0", host, sizeof(host), &port), 0);
    CU_ASSERT_STRING_EQUAL(host, "127.0.0.1");
    CU_ASSERT_EQUAL(port, 0);
    CU_ASSERT_EQUAL(httpd_parse_addr("8081", host, sizeof(host), &port), -1);
}

static const cu_entry_t tests[] = {
    CU_SUITE("firstrun-opts"),
    {"durations print as Go's time.Duration", test_go_durations},
    {"unlisted shared flags are still accepted", test_select_unlists_but_accepts},
    {"--runtime-dir help names the real default", test_runtime_dir_help_names_the_real_default},
    {"daemons' --help: used flags, pre-parse defaults", test_daemon_help},
    CU_SUITE("firstrun-rundir"),
    {"check: link, type, owner, mode", test_runtime_dir_check_table},
    {"create 0700, refuse link/file/open mode", test_runtime_dir_on_disk},
    {"candidate names", test_rundir_candidates},
    {"supervisor picks a free default", test_rundir_picks_a_free_one},
    CU_SUITE("firstrun-metrics"),
    {"process_cpu_seconds_total is a counter", test_process_metric_types},
    {"bound address with port 0", test_bound_address},
};

CU_MAIN(tests)
