/* Unit tests of the small common modules: buf, clock, log, opts, filesig (and
 * daemon_child_name). */
#include "b64.h"
#include "buf.h"
#include "clock.h"
#include "cu_table.h"
#include "daemon.h"
#include "filesig.h"
#include "log.h"
#include "loop.h"
#include "opts.h"
#include "text_assert.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void test_buf_append_and_cap(void)
{
    buf_t b;
    buf_init(&b, 8);
    CU_ASSERT_STRING_EQUAL(buf_str(&b), "");
    CU_ASSERT_EQUAL(buf_puts(&b, "abcd"), 0);
    CU_ASSERT_EQUAL(buf_printf(&b, "%d", 123), 0);
    CU_ASSERT_STRING_EQUAL(buf_str(&b), "abcd123");
    /* One more than the cap is refused and leaves the contents alone. */
    CU_ASSERT_EQUAL(buf_puts(&b, "xy"), -1);
    CU_ASSERT_STRING_EQUAL(buf_str(&b), "abcd123");
    CU_ASSERT_EQUAL(buf_puts(&b, "z"), 0);
    CU_ASSERT_EQUAL(b.len, 8);
    buf_consume(&b, 3);
    CU_ASSERT_STRING_EQUAL(buf_str(&b), "d123z");
    char *s = buf_detach(&b);
    CU_ASSERT_STRING_EQUAL(s, "d123z");
    CU_ASSERT_PTR_NULL(b.data);
    free(s);
    buf_free(&b);
}

/* b64_text: a Secret's base64 into a C string; not base64, or a NUL inside: NULL. */
static void test_b64_text(void)
{
    const char *ok[][2] = {{"", ""}, {"cA==", "p"}, {"cHc=", "pw"}, {"czNjcjN0", "s3cr3t"}};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        char *t = b64_text(ok[i][0]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(t);
        CU_ASSERT_STRING_EQUAL(t, ok[i][1]);
        free(t);
    }
    const char *bad[] = {"cA", "c*==", "AGE=" /* "\0a" */};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CU_ASSERT_PTR_NULL(b64_text(bad[i]));
}

static void test_clock_rfc3339_roundtrip(void)
{
    char out[40];
    int64_t t = INT64_C(1714564800) * NS_PER_SEC + 123456789;
    CU_ASSERT_STRING_EQUAL(clock_format_rfc3339(t, 0, out, sizeof(out)), "2024-05-01T12:00:00Z");
    CU_ASSERT_STRING_EQUAL(clock_format_rfc3339(t, 6, out, sizeof(out)),
                           "2024-05-01T12:00:00.123456Z");
    int64_t back = 0;
    CU_ASSERT_EQUAL(clock_parse_rfc3339("2024-05-01T12:00:00.123456789Z", &back), 0);
    CU_ASSERT_EQUAL(back, t);
    CU_ASSERT_EQUAL(clock_parse_rfc3339("2024-05-01T14:00:00+02:00", &back), 0);
    CU_ASSERT_EQUAL(back, INT64_C(1714564800) * NS_PER_SEC);
    CU_ASSERT_EQUAL(clock_parse_rfc3339("2024-05-01 12:00", &back), -1);
    CU_ASSERT_EQUAL(clock_parse_rfc3339("2024-13-01T12:00:00Z", &back), -1);
    CU_ASSERT_EQUAL(clock_parse_rfc3339("2024-05-01T12:00:00Zjunk", &back), -1);
    CU_ASSERT_EQUAL(clock_parse_rfc3339("", &back), -1);
    CU_ASSERT(clock_mono_ns() > 0);
}

/* Each rule of the RFC 3339 layout as clock_parse_rfc3339 applies it: the wall time it
 * reads (seconds and nanoseconds), or refused. */
static void test_clock_rfc3339_rules(void)
{
    static const struct {
        const char *text;
        int ok;
        int64_t secs, ns;
    } rows[] = {
        {"2024-05-01t12:00:00z", 1, 1714564800, 0},
        {"2024-02-29T00:00:00Z", 1, 1709164800, 0},
        {"2000-02-29T00:00:00Z", 1, 951782400, 0},
        {"2023-02-29T00:00:00Z", 0, 0, 0},
        {"1900-02-29T00:00:00Z", 0, 0, 0},
        {"2024-04-31T00:00:00Z", 0, 0, 0},
        {"2024-00-10T12:00:00Z", 0, 0, 0},
        {"2024-05-00T12:00:00Z", 0, 0, 0},
        {"2024-05-01T24:00:00Z", 0, 0, 0},
        {"2024-05-01T12:60:00Z", 0, 0, 0},
        {"2016-12-31T23:59:60Z", 1, 1483228800, 0}, /* a leap second: the next minute */
        {"2016-12-31T23:59:61Z", 0, 0, 0},
        {"2024-05-01T12:00:00.5Z", 1, 1714564800, 500000000},
        {"2024-05-01T12:00:00.1234567891Z", 1, 1714564800, 123456789},
        {"2024-05-01T12:00:00.Z", 0, 0, 0},
        {"2024-05-01T06:30:00-05:30", 1, 1714564800, 0},
        {"2024-05-01T12:00:00+23:59", 1, 1714564800 - 23 * 3600 - 59 * 60, 0},
        {"2024-05-01T12:00:00+24:00", 0, 0, 0},
        {"2024-05-01T12:00:00+02:60", 0, 0, 0},
        {"2024-05-01T12:00:00+02", 0, 0, 0},
        {"2024-05-01T12:00:00+0200", 0, 0, 0},
        {"2024-05-01T12:00:00", 0, 0, 0},
        {"24-05-01T12:00:00Z", 0, 0, 0},
        {"2024-5-01T12:00:00Z", 0, 0, 0},
        {"2024-05-01X12:00:00Z", 0, 0, 0},
        {"2024-05-01T12:00Z", 0, 0, 0},
        {"2024/05/01T12:00:00Z", 0, 0, 0},
        {"2024-05-01T12:00:00 Z", 0, 0, 0},
        {"1969-12-31T23:59:59Z", 1, -1, 0},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        int64_t t = 42;
        int rc = clock_parse_rfc3339(rows[i].text, &t);
        CU_ASSERT_EQUAL(rc, rows[i].ok ? 0 : -1);
        CU_ASSERT_EQUAL(t, rows[i].ok ? rows[i].secs * NS_PER_SEC + rows[i].ns : 42); /* refused: left alone */
        if (rc != (rows[i].ok ? 0 : -1))
            fprintf(stderr, "\n%s: %d\n", rows[i].text, rc);
    }
}

static char *capture_log(rlog_format_t format, void (*emit)(void))
{
    char *data = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&data, &len);
    rlog_init("unit", RLOG_INFO, format, f);
    emit();
    fclose(f);
    rlog_init("unit", RLOG_INFO, RLOG_JSON, NULL);
    return data;
}

static void emit_records(void)
{
    rlog_debug("hidden");
    rlog_info("reconcile done", "namespace", "default", "name", "a \"quoted\"\nname");
    rlog_error("boom", "err", NULL);
}

static void test_log_json_lines(void)
{
    char *out = capture_log(RLOG_JSON, emit_records);
    /* Two lines: debug is below the level. */
    char *nl = strchr(out, '\n');
    CU_ASSERT_PTR_NOT_NULL_FATAL(nl);
    CU_ASSERT_PTR_NOT_NULL(strchr(nl + 1, '\n'));
    CU_ASSERT_PTR_NULL(strstr(out, "hidden"));
    ASSERT_TEXT_HAS(out, "\"level\":\"info\",\"logger\":\"unit\",\"msg\":\"reconcile done\"",
                    "\"name\":\"a \\\"quoted\\\"\\nname\"", "\"err\":null");
    CU_ASSERT_EQUAL(strncmp(out, "{\"ts\":\"", 7), 0);
    free(out);
}

static void test_log_text_lines(void)
{
    char *out = capture_log(RLOG_TEXT, emit_records);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "info  unit \"reconcile done\" namespace=default"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "error unit boom err=null"));
    free(out);
}

static void test_log_parse(void)
{
    rlog_level_t l;
    rlog_format_t f;
    CU_ASSERT_EQUAL(rlog_parse_level("DEBUG", &l), 0);
    CU_ASSERT_EQUAL(l, RLOG_DEBUG);
    CU_ASSERT_EQUAL(rlog_parse_level("warning", &l), 0);
    CU_ASSERT_EQUAL(l, RLOG_WARN);
    CU_ASSERT_EQUAL(rlog_parse_level("loud", &l), -1);
    CU_ASSERT_EQUAL(rlog_parse_format("text", &f), 0);
    CU_ASSERT_EQUAL(f, RLOG_TEXT);
    CU_ASSERT_EQUAL(rlog_parse_format("xml", &f), -1);
}

/* The flag table of a process with the shared flags only, for c at its defaults. */
static void common_only(rdc_common_opts_t *c, opt_t table[OPTS_COMMON_COUNT + 1])
{
    static const opt_t none[] = {{NULL, OPT_END, NULL, NULL}};
    opts_common_defaults(c);
    opts_common_join(c, none, table);
}

static void test_opts_parse_common(void)
{
    rdc_common_opts_t c;
    opt_t table[OPTS_COMMON_COUNT + 1];
    common_only(&c, table);
    char *argv[] = {"prog", "--kubeconfig", "/tmp/k", "--leader-elect", "--workers=4",
                    "--namespace", "a", "--namespace=b", "--sync-period=1h30m",
                    "--kube-api-qps", "5.5", "--leader-elect=false", "pos"};
    const char *pos[2];
    size_t npos = 0;
    char err[256] = "";
    CU_ASSERT_EQUAL(opts_parse(table, 13, argv, pos, 2, &npos, err, sizeof(err)), 0);
    CU_ASSERT_STRING_EQUAL(c.kubeconfig, "/tmp/k");
    CU_ASSERT_EQUAL(c.leader_elect, 0);
    CU_ASSERT_EQUAL(c.workers, 4);
    CU_ASSERT_EQUAL(c.namespaces.n, 2);
    CU_ASSERT_STRING_EQUAL(c.namespaces.items[1], "b");
    CU_ASSERT_DOUBLE_EQUAL(c.sync_period, 5400, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(c.kube_api_qps, 5.5, 1e-9);
    CU_ASSERT_EQUAL(npos, 1);
    CU_ASSERT_STRING_EQUAL(pos[0], "pos");
    /* Defaults survive. */
    CU_ASSERT_STRING_EQUAL(c.metrics_bind_address, ":8080");
    CU_ASSERT_DOUBLE_EQUAL(c.lease_duration, 15, 1e-9);
}

/* Bad command lines ("prog ARG") and what their error must name. */
static const struct { const char *arg, *err; } bad_flags[] = {
    {"--workers=many", "--workers"},
    {"--no-such-flag", "--no-such-flag"},
    {"--kubeconfig", "needs a value"},
    {"--sync-period=soon", "duration"},
    {"stray", "stray"},
};

static void test_opts_errors_name_the_flag(void)
{
    rdc_common_opts_t c;
    opt_t table[OPTS_COMMON_COUNT + 1];
    common_only(&c, table);
    for (size_t i = 0; i < sizeof(bad_flags) / sizeof(bad_flags[0]); i++) {
        char err[256] = "";
        char *argv[] = {"prog", (char *)bad_flags[i].arg};
        CU_ASSERT_EQUAL(opts_parse(table, 2, argv, NULL, 0, NULL, err, sizeof(err)), -1);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, bad_flags[i].err));
    }
}

/* A daemon's own flags after the shared ones, in order, with one OPT_END at the end. */
static void test_opts_common_join(void)
{
    rdc_common_opts_t c;
    opts_common_defaults(&c);
    int mine = 0;
    const char *other = NULL;
    const opt_t own[] = {
        {"mine", OPT_BOOL, &mine, "a daemon's own flag"},
        {"other", OPT_STRING, &other, NULL},
        {NULL, OPT_END, NULL, NULL},
    };
    opt_t table[OPTS_JOINED_LEN(own)];
    CU_ASSERT_EQUAL(sizeof(table) / sizeof(table[0]), OPTS_COMMON_COUNT + 3);
    opts_common_join(&c, own, table);
    CU_ASSERT_STRING_EQUAL(table[0].name, "kubeconfig");
    CU_ASSERT_STRING_EQUAL(table[OPTS_COMMON_COUNT].name, "mine");
    CU_ASSERT_PTR_EQUAL(table[OPTS_COMMON_COUNT + 1].target, &other);
    CU_ASSERT_EQUAL(table[OPTS_COMMON_COUNT + 2].type, OPT_END);
    char *argv[] = {"prog", "--mine", "--other=x", "--workers", "7"};
    char err[256] = "";
    CU_ASSERT_EQUAL(opts_parse(table, 5, argv, NULL, 0, NULL, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(mine, 1);
    CU_ASSERT_STRING_EQUAL(other, "x");
    CU_ASSERT_EQUAL(c.workers, 7);
}

/* opts_daemon_main parses shared and own flags together and goes on (-1); a bad flag
 * ends main with 2; --version with 0. */
static void test_opts_daemon_main(void)
{
    rdc_common_opts_t c;
    opts_common_defaults(&c);
    int mine = 0;
    const opt_t own[] = {{"mine", OPT_BOOL, &mine, "a daemon's own flag"}, {NULL, OPT_END, NULL, NULL}};
    char *ok[] = {"prog", "--mine", "--workers=3", "--log-level=info"};
    CU_ASSERT_EQUAL(opts_daemon_main("prog", "a test", &c, own, 4, ok, "log-level,workers"), -1);
    CU_ASSERT_EQUAL(mine, 1);
    CU_ASSERT_EQUAL(c.workers, 3);
    /* An unlisted shared flag is still accepted (the supervisor passes them all). */
    char *unlisted[] = {"prog", "--sync-period=2m"};
    CU_ASSERT_EQUAL(opts_daemon_main("prog", "a test", &c, own, 2, unlisted, "log-level"), -1);
    CU_ASSERT_DOUBLE_EQUAL(c.sync_period, 120, 1e-9);
    char *bad[] = {"prog", "--mine=perhaps"};
    CU_ASSERT_EQUAL(opts_daemon_main("prog", "a test", &c, own, 2, bad, "log-level"), 2);
    char *version[] = {"prog", "--version"};
    CU_ASSERT_EQUAL(opts_daemon_main("prog", "a test", &c, own, 2, version, "log-level"), 0);
}

/* The metrics timer publishes on the first turn, to <dir>/metrics/<name>.prom. */
static void test_daemon_metrics_timer(void)
{
    char dir[] = "/tmp/test_base_metrics_XXXXXX", sub[64], file[96];
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    snprintf(sub, sizeof(sub), "%s/metrics", dir);
    snprintf(file, sizeof(file), "%s/unit-1.prom", sub);
    CU_ASSERT_EQUAL_FATAL(mkdir(sub, 0700), 0);
    loop_t *loop = loop_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(loop);
    daemon_metrics_t m = {dir, "unit-1"};
    CU_ASSERT(daemon_add_metrics_timer(loop, &m) > 0);
    CU_ASSERT_EQUAL(access(file, F_OK), -1);
    CU_ASSERT_EQUAL(loop_run_once(loop, 0), 0);
    CU_ASSERT_EQUAL(access(file, F_OK), 0);
    loop_destroy(&loop);
    unlink(file);
    rmdir(sub);
    rmdir(dir);
}

static void test_daemon_child_name(void)
{
    unsetenv("RDC_CHILD_NAME");
    CU_ASSERT_STRING_EQUAL(daemon_child_name("workerd"), "workerd");
    setenv("RDC_CHILD_NAME", "", 1);
    CU_ASSERT_STRING_EQUAL(daemon_child_name("workerd"), "workerd");
    setenv("RDC_CHILD_NAME", "workerd-2", 1);
    CU_ASSERT_STRING_EQUAL(daemon_child_name("workerd"), "workerd-2");
    unsetenv("RDC_CHILD_NAME");
}

static void test_opts_durations(void)
{
    double s;
    CU_ASSERT_EQUAL(opts_parse_duration("15s", &s), 0);
    CU_ASSERT_DOUBLE_EQUAL(s, 15, 1e-9);
    CU_ASSERT_EQUAL(opts_parse_duration("500ms", &s), 0);
    CU_ASSERT_DOUBLE_EQUAL(s, 0.5, 1e-9);
    CU_ASSERT_EQUAL(opts_parse_duration("10h", &s), 0);
    CU_ASSERT_DOUBLE_EQUAL(s, 36000, 1e-9);
    CU_ASSERT_EQUAL(opts_parse_duration("2.5", &s), 0);
    CU_ASSERT_DOUBLE_EQUAL(s, 2.5, 1e-9);
    CU_ASSERT_EQUAL(opts_parse_duration("1x", &s), -1);
    CU_ASSERT_EQUAL(opts_parse_duration("-1s", &s), -1);
    CU_ASSERT_EQUAL(opts_parse_duration("", &s), -1);
}

/* Replace path with text through a rename, as the kubelet swaps a mounted Secret. */
static void swap_file(const char *path, const char *text)
{
    char tmp[256];
    snprintf(tmp, sizeof(tmp), "%s.new", path);
    FILE *f = fopen(tmp, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(text, f);
    fclose(f);
    CU_ASSERT_EQUAL_FATAL(rename(tmp, path), 0);
}

/* A rotated pair is a change until a read of it settles; a swap during the read leaves
 * it a change, to be read again. */
static void test_filesig_watch(void)
{
    char dir[] = "/tmp/test_base_filesig_XXXXXX", crt[96], key[96];
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    snprintf(crt, sizeof(crt), "%s/tls.crt", dir);
    snprintf(key, sizeof(key), "%s/tls.key", dir);
    swap_file(crt, "certificate 1");
    swap_file(key, "key 1");
    filesig_watch_t w;
    filesig_pair_t now;
    CU_ASSERT_EQUAL_FATAL(filesig_watch_init(&w, dir, "tls.crt", "tls.key"), 0);
    CU_ASSERT_STRING_EQUAL(w.cert_path, crt);
    CU_ASSERT_STRING_EQUAL(w.key_path, key);
    CU_ASSERT_EQUAL(filesig_watch_changed(&w, &now), 0);
    swap_file(key, "key 2");
    CU_ASSERT_EQUAL(filesig_watch_changed(&w, &now), 1);
    CU_ASSERT_EQUAL(filesig_watch_changed(&w, &now), 1); /* nothing settled yet */
    swap_file(crt, "certificate 2");                     /* during the read */
    CU_ASSERT_EQUAL(filesig_watch_settle(&w, &now), 0);
    CU_ASSERT_EQUAL(filesig_watch_changed(&w, &now), 1);
    CU_ASSERT_EQUAL(filesig_watch_settle(&w, &now), 1);
    CU_ASSERT_EQUAL(filesig_watch_changed(&w, &now), 0);
    CU_ASSERT_EQUAL_FATAL(unlink(key), 0); /* a file gone is a change too */
    CU_ASSERT_EQUAL(filesig_watch_changed(&w, &now), 1);
    filesig_watch_free(&w);
    CU_ASSERT_PTR_NULL(w.cert_path);
    filesig_watch_free(&w); /* an emptied watch may be freed again */
    unlink(crt);
    rmdir(dir);
}

static const cu_entry_t tests[] = {
    CU_SUITE("buf"),
    {"append, printf, cap, consume, detach", test_buf_append_and_cap},
    {"b64_text: base64 into a C string, refusals", test_b64_text},
    CU_SUITE("clock"),
    {"RFC 3339 format and parse", test_clock_rfc3339_roundtrip},
    {"RFC 3339: the layout's rules, one row each", test_clock_rfc3339_rules},
    CU_SUITE("log"),
    {"JSON lines with escaping", test_log_json_lines},
    {"text lines", test_log_text_lines},
    {"level and format names", test_log_parse},
    CU_SUITE("opts"),
    {"common flags parse", test_opts_parse_common},
    {"errors name the flag", test_opts_errors_name_the_flag},
    {"Go durations", test_opts_durations},
    {"shared and own flags joined", test_opts_common_join},
    {"a daemon's main: join, select, parse", test_opts_daemon_main},
    CU_SUITE("daemon"),
    {"child name from the supervisor", test_daemon_child_name},
    {"metrics timer", test_daemon_metrics_timer},
    CU_SUITE("filesig"),
    {"a certificate pair watched: changed, settled, swapped while read", test_filesig_watch},
};

CU_MAIN(tests)
