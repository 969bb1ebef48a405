/* Unit tests for common/kube_config*.c: parsing, source selection and merging, context
 * resolution, error messages, rotating token files and exec credential plugins.
 *
 * Every test works in a private temporary directory; certificates are generated with the
 * openssl command once per suite; exec plugins are small /bin/sh scripts.
 */
#include "cu_table.h"
#include "kube_config.h"
#include "kube_config_internal.h"
#include "text_assert.h"

#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <json-c/json.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char g_root[128];        /* mkdtemp directory of the whole run */
static char g_dir[256];         /* fresh subdirectory of the current test */
static int g_test_no;
static char *g_cert, *g_key, *g_key2; /* PEM: self-signed cert (also the CA), its key,
                                          an unrelated key */

/* ---- helpers ---- */

/* expr must return 0; on failure show err (the message under test) and stop the test. */
#define ASSERT_LOADS(expr)                                                             \
    do {                                                                               \
        int rc_ = (expr);                                                              \
        if (rc_ != 0)                                                                  \
            fprintf(stderr, "\n    %s failed: %s\n", #expr, err);                     \
        CU_ASSERT_EQUAL_FATAL(rc_, 0);                                                 \
    } while (0)

static char *xprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = malloc((size_t)n + 1);
    if (s == NULL)
        abort();
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

/* Path of name inside the test directory (static buffer rotation: 8 live at once). */
static const char *tpath(const char *name)
{
    static char bufs[8][1024];
    static int next;
    char *b = bufs[next++ % 8];
    snprintf(b, sizeof bufs[0], "%s/%s", g_dir, name);
    return b;
}

static void mkdirs_for(const char *path)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(tmp, 0755);
            *p = '/';
        }
}

/* Write content to name (relative to the test directory) with the given mode. */
static void write_mode(const char *name, const char *content, mode_t mode)
{
    const char *path = name[0] == '/' ? name : tpath(name);
    mkdirs_for(path);
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s.new", path);
    FILE *f = fopen(tmp, "w");
    CU_ASSERT_FATAL(f != NULL);
    fputs(content, f);
    fclose(f);
    chmod(tmp, mode);
    CU_ASSERT_FATAL(rename(tmp, path) == 0);
}

static void write_file(const char *name, const char *content)
{
    write_mode(name, content, 0644);
}

/* Overwrite in place (same inode) and set the mtime. */
static void overwrite_with_mtime(const char *path, const char *content, time_t sec, long nsec)
{
    FILE *f = fopen(path, "w");
    CU_ASSERT_FATAL(f != NULL);
    fputs(content, f);
    fclose(f);
    struct timespec ts[2] = {{sec, nsec}, {sec, nsec}};
    CU_ASSERT_FATAL(utimensat(AT_FDCWD, path, ts, 0) == 0);
}

static char *slurp(const char *path)
{
    char *buf, why[128];
    size_t len;
    if (kcfg_read_file(path, 1 << 20, 0, &buf, &len, NULL, why, sizeof why))
        return NULL;
    return buf;
}

static int count_lines(const char *path)
{
    char *s = slurp(path);
    int n = 0;
    for (char *p = s; p && *p; p++)
        n += *p == '\n';
    free(s);
    return n;
}

static char *b64(const char *s)
{
    size_t len = strlen(s);
    char *out = malloc(4 * ((len + 2) / 3) + 1);
    if (out == NULL)
        abort();
    EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s, (int)len);
    return out;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static int64_t g_fake_now;
static int64_t fake_now(void)
{
    return g_fake_now;
}

/* Each test gets a fresh directory and default hooks. */
static void setup_test(void)
{
    snprintf(g_dir, sizeof g_dir, "%s/t%d", g_root, ++g_test_no);
    mkdir(g_dir, 0755);
    kcfg_test_set_clock(NULL);
    kcfg_test_set_exec_timeout_ms(0);
}

static void teardown_test(void)
{
    kcfg_test_set_clock(NULL);
    kcfg_test_set_exec_timeout_ms(0);
}

static int suite_cleanup(void)
{
    free(g_cert);
    free(g_key);
    free(g_key2);
    g_cert = g_key = g_key2 = NULL;
    if (g_root[0])
        nftw(g_root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    g_root[0] = '\0';
    return 0;
}

static int suite_init(void)
{
    snprintf(g_root, sizeof g_root, "/tmp/kcfg-test-XXXXXX");
    if (mkdtemp(g_root) == NULL) {
        g_root[0] = '\0';
        return -1;
    }
    char *cmd = xprintf(
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
        "-keyout %s/key.pem -out %s/cert.pem -days 2 -subj /CN=kcfg-test >/dev/null 2>&1 && "
        "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out %s/key2.pem "
        ">/dev/null 2>&1",
        g_root, g_root, g_root);
    int rc = system(cmd);
    free(cmd);
    if (rc != 0) {
        fprintf(stderr, "test_kube_config: generating certificates with openssl failed\n");
        suite_cleanup();
        return -1;
    }
    char p[512];
    snprintf(p, sizeof p, "%s/cert.pem", g_root);
    g_cert = slurp(p);
    snprintf(p, sizeof p, "%s/key.pem", g_root);
    g_key = slurp(p);
    snprintf(p, sizeof p, "%s/key2.pem", g_root);
    g_key2 = slurp(p);
    if (g_cert && g_key && g_key2)
        return 0;
    suite_cleanup();
    return -1;
}

/* Each suite has its own temporary directory and certificates (suite_init/cleanup);
 * each test a fresh subdirectory and default hooks (setup_test/teardown_test). */
CU_HOOKS({"kube_config parse", suite_init, suite_cleanup, setup_test, teardown_test},
         {"kube_config sources", suite_init, suite_cleanup, setup_test, teardown_test},
         {"kube_config credentials", suite_init, suite_cleanup, setup_test, teardown_test});


/* Load a kubeconfig text from memory. */
static int load_text(const char *yaml, const char *context, kube_config_t **cfg, char *err,
                     size_t errlen)
{
    return kube_config_load_buffer(yaml, strlen(yaml), tpath("config"), context, cfg, err,
                                   errlen);
}

/* Load a kubeconfig file with no other source able to interfere. */
static int load_path(const char *path, const char *context, kube_config_t **cfg, char *err,
                     size_t errlen)
{
    kube_config_opts_t o = {.kubeconfig_path = path, .context = context,
                            .env_kubeconfig = "", .home = g_dir, .no_in_cluster = 1};
    return kube_config_load(&o, cfg, err, errlen);
}

static const char *SIMPLE =
    "apiVersion: v1\n"
    "kind: Config\n"
    "current-context: dev\n"
    "preferences: {}\n"
    "clusters:\n"
    "- name: c1\n"
    "  cluster:\n"
    "    server: https://api.example.com:6443/\n"
    "    tls-server-name: api.internal\n"
    "- name: c2\n"
    "  cluster:\n"
    "    server: http://127.0.0.1:8080\n"
    "    insecure-skip-tls-verify: true\n"
    "users:\n"
    "- name: u1\n"
    "  user:\n"
    "    token: secret-token\n"
    "- name: nobody\n"
    "  user: {}\n"
    "contexts:\n"
    "- name: dev\n"
    "  context: {cluster: c1, user: u1, namespace: team-a}\n"
    "- name: other\n"
    "  context:\n"
    "    cluster: c2\n"
    "    user: nobody\n";

/* ---- parsing and resolution ---- */

/* The text of a kubeconfig of one context, x, of cluster c and user u: cluster and user
 * are what follows "cluster:" and "user:" (a flow mapping, or lines indented four spaces
 * each after a newline). A string literal: also a printf format. */
#define KC_ONE(cluster, user)                                                          \
    "current-context: x\nclusters:\n- name: c\n  cluster:" cluster "\nusers:\n- name: u\n" \
    "  user:" user "\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
/* The cluster of the tests that only need one. */
#define KC_H " {server: 'https://h'}"

/* Loading the kubeconfig text fails (no configuration made) with every part in the error:
 * refused(text, "part", ...). */
#define refused(text, ...) refused_each((text), (const char *const[]){__VA_ARGS__, NULL})
static void refused_each(const char *text, const char *const *parts)
{
    kube_config_t *cfg = NULL;
    char err[512] = "";
    CU_ASSERT_EQUAL(load_text(text, NULL, &cfg, err, sizeof err), -1);
    text_assert_each(err, parts, 1);
    CU_ASSERT_PTR_NULL(cfg);
}

/* refused() of the kubeconfig text printf(fmt, arg). */
#define refused_with(fmt, arg, ...)                                                        \
    do {                                                                                   \
        char *text_ = xprintf((fmt), (arg));                                               \
        refused(text_, __VA_ARGS__);                                                       \
        free(text_);                                                                       \
    } while (0)

static void test_buffer_basic(void)
{
    kube_config_t *cfg = NULL;
    char err[512] = "";
    const char *tok, *cert, *key;

    ASSERT_LOADS(load_text(SIMPLE, NULL, &cfg, err, sizeof err));
    const kube_rest_config_t *r = kube_config_rest(cfg);
    CU_ASSERT_STRING_EQUAL(r->server, "https://api.example.com:6443");
    CU_ASSERT_STRING_EQUAL(r->context, "dev");
    CU_ASSERT_STRING_EQUAL(r->cluster, "c1");
    CU_ASSERT_STRING_EQUAL(r->user, "u1");
    CU_ASSERT_STRING_EQUAL(r->namespace_, "team-a");
    CU_ASSERT_STRING_EQUAL(r->tls_server_name, "api.internal");
    CU_ASSERT_STRING_EQUAL(r->source, tpath("config"));
    CU_ASSERT_PTR_NULL(r->ca_pem);
    CU_ASSERT_PTR_NULL(r->client_cert_pem);
    CU_ASSERT_EQUAL(r->insecure_skip_tls_verify, 0);
    CU_ASSERT_EQUAL(r->has_bearer, 1);
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(tok, "secret-token");
    CU_ASSERT_PTR_NULL(cert);
    CU_ASSERT_PTR_NULL(key);
    kube_config_destroy(&cfg);
    CU_ASSERT_PTR_NULL(cfg);
    kube_config_destroy(&cfg); /* safe twice */
    kube_config_destroy(NULL);
}

static void test_context_override(void)
{
    kube_config_t *cfg = NULL;
    char err[512] = "";
    const char *tok, *cert, *key;

    ASSERT_LOADS(load_text(SIMPLE, "other", &cfg, err, sizeof err));
    const kube_rest_config_t *r = kube_config_rest(cfg);
    CU_ASSERT_STRING_EQUAL(r->context, "other");
    CU_ASSERT_STRING_EQUAL(r->server, "http://127.0.0.1:8080");
    CU_ASSERT_STRING_EQUAL(r->namespace_, "default");
    CU_ASSERT_STRING_EQUAL(r->user, "nobody");
    CU_ASSERT_EQUAL(r->insecure_skip_tls_verify, 1);
    CU_ASSERT_EQUAL(r->has_bearer, 0);
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), 0);
    CU_ASSERT_PTR_NULL(tok);
    kube_config_destroy(&cfg);

    CU_ASSERT_EQUAL(load_text(SIMPLE, "nope", &cfg, err, sizeof err), -1);
    CU_ASSERT_PTR_NULL(cfg);
    ASSERT_TEXT_HAS(err, "context \"nope\" not found");
}

static void test_no_current_context(void)
{
    kube_config_t *cfg = NULL;
    char err[512] = "";
    CU_ASSERT_EQUAL(load_text("clusters: []\n", NULL, &cfg, err, sizeof err), -1);
    CU_ASSERT_PTR_NULL(cfg);
    ASSERT_TEXT_HAS(err, "current-context");
    CU_ASSERT_EQUAL(kube_config_load_buffer("", 0, "empty.yaml", NULL, &cfg, err, sizeof err),
                    -1);
    ASSERT_TEXT_HAS(err, "empty.yaml");
}

static void test_inline_data(void)
{
    kube_config_t *cfg = NULL;
    char err[512] = "";
    const char *tok, *cert, *key;
    char *ca = b64(g_cert), *crt = b64(g_cert), *k = b64(g_key);
    /* Split the base64 over lines: whitespace inside must be ignored. */
    char *yaml = xprintf(KC_ONE("\n    server: https://h:1\n    certificate-authority-data: %s",
                                "\n    client-certificate-data: %s\n"
                                "    client-key-data: |\n      %.40s\n      %s"),
                         ca, crt, k, k + 40);

    ASSERT_LOADS(load_text(yaml, NULL, &cfg, err, sizeof err));
    const kube_rest_config_t *r = kube_config_rest(cfg);
    CU_ASSERT_FATAL(r->ca_pem != NULL && r->client_cert_pem && r->client_key_pem);
    CU_ASSERT_EQUAL(r->ca_pem_len, strlen(g_cert));
    CU_ASSERT_STRING_EQUAL(r->ca_pem, g_cert);
    CU_ASSERT_EQUAL(r->client_cert_pem_len, strlen(g_cert));
    CU_ASSERT_STRING_EQUAL(r->client_cert_pem, g_cert);
    CU_ASSERT_EQUAL(r->client_key_pem_len, strlen(g_key));
    CU_ASSERT_STRING_EQUAL(r->client_key_pem, g_key);
    CU_ASSERT_EQUAL(r->has_bearer, 0);
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), 0);
    CU_ASSERT_PTR_NULL(tok);
    CU_ASSERT_PTR_EQUAL(cert, r->client_cert_pem);
    CU_ASSERT_PTR_EQUAL(key, r->client_key_pem);
    kube_config_destroy(&cfg);
    free(yaml);
    free(ca);
    free(crt);
    free(k);
}

/* Padding lengths 0, 1 and 2 all decode to the exact bytes. */
static void test_base64_padding(void)
{
    /* Three lengths in a row cover all three lengths modulo 3 (trailing text after a
     * PEM block is allowed). */
    static const char *const tails[] = {"A", "AB", "ABC"};
    for (int pad = 0; pad < 3; pad++) {
        char *pem = xprintf("%s%s", g_cert, tails[pad]);
        char *data = b64(pem);
        char *yaml = xprintf(KC_ONE("\n    server: https://h\n    certificate-authority-data: %s", " {}"), data);
        kube_config_t *cfg = NULL;
        char err[512] = "";
        CU_ASSERT_EQUAL(load_text(yaml, NULL, &cfg, err, sizeof err), 0);
        if (cfg) {
            CU_ASSERT_EQUAL(kube_config_rest(cfg)->ca_pem_len, strlen(pem));
            CU_ASSERT_EQUAL(memcmp(kube_config_rest(cfg)->ca_pem, pem, strlen(pem)), 0);
        }
        kube_config_destroy(&cfg);
        free(yaml);
        free(data);
        free(pem);
    }
}

static void test_bad_base64(void)
{
    refused(KC_ONE("\n    server: https://h\n    certificate-authority-data: 'abc!'", " {}"), "cluster \"c\"",
            "certificate-authority-data: invalid base64");

    char *notpem = b64("hello world");
    refused_with(KC_ONE("\n    server: https://h\n    certificate-authority-data: %s", " {}"), notpem,
                 "no PEM certificate");
    free(notpem);
}

static void test_relative_files(void)
{
    kube_config_t *cfg = NULL;
    char err[512] = "";
    const char *tok, *cert, *key;

    write_file("kube/pki/ca.crt", g_cert);
    write_file("kube/pki/client.crt", g_cert);
    write_file("kube/client.key", g_key);
    write_file("kube/token.txt", "file-token\n");
    write_file("kube/config", KC_ONE("\n    server: https://h:6443\n    certificate-authority: pki/ca.crt",
                                     "\n    client-certificate: ./pki/client.crt\n"
                                     "    client-key: client.key\n    tokenFile: token.txt"));
    /* The working directory is elsewhere: paths must resolve against kube/. */
    char cwd[PATH_MAX];
    CU_ASSERT_FATAL(getcwd(cwd, sizeof cwd) != NULL);
    CU_ASSERT_FATAL(chdir("/") == 0);
    int rc = load_path(tpath("kube/config"), NULL, &cfg, err, sizeof err);
    CU_ASSERT_FATAL(chdir(cwd) == 0);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    const kube_rest_config_t *r = kube_config_rest(cfg);
    CU_ASSERT_STRING_EQUAL(r->ca_pem, g_cert);
    CU_ASSERT_STRING_EQUAL(r->client_cert_pem, g_cert);
    CU_ASSERT_STRING_EQUAL(r->client_key_pem, g_key);
    CU_ASSERT_EQUAL(r->has_bearer, 1);
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(tok, "file-token");
    kube_config_destroy(&cfg);

    /* A relative kubeconfig path is taken against the working directory. */
    CU_ASSERT_FATAL(chdir(g_dir) == 0);
    rc = load_path("kube/config", NULL, &cfg, err, sizeof err);
    CU_ASSERT_FATAL(chdir(cwd) == 0);
    CU_ASSERT_EQUAL(rc, 0);
    kube_config_destroy(&cfg);
}

static void test_missing_referenced_file(void)
{
    kube_config_t *cfg = NULL;
    char err[512] = "";
    write_file("config", KC_ONE("\n    server: https://h\n    certificate-authority: nothere.crt", " {}"));
    CU_ASSERT_EQUAL(load_path(tpath("config"), NULL, &cfg, err, sizeof err), -1);
    ASSERT_TEXT_HAS(err, tpath("nothere.crt"), "No such file or directory", "cluster \"c\"");
}

static void test_malformed_yaml(void)
{
    kube_config_t *cfg = NULL;
    char err[512] = "";
    write_file("bad.yaml", "clusters:\n- name: c\n  cluster: {server: [unclosed\n");
    CU_ASSERT_EQUAL(load_path(tpath("bad.yaml"), NULL, &cfg, err, sizeof err), -1);
    CU_ASSERT_PTR_NULL(cfg);
    ASSERT_TEXT_HAS(err, tpath("bad.yaml"), "line");

    const char *tab = "clusters:\n\t- name: c\n";
    CU_ASSERT_EQUAL(kube_config_load_buffer(tab, strlen(tab), "tabs.yaml", NULL, &cfg, err,
                                            sizeof err), -1);
    ASSERT_TEXT_HAS(err, "tabs.yaml", "line 2");

    /* Invalid UTF-8 is a reader error: still a line number. */
    const char bin[] = "a: b\nc: \xff\xfe\n";
    CU_ASSERT_EQUAL(kube_config_load_buffer(bin, sizeof bin - 1, "bin.yaml", NULL, &cfg, err,
                                            sizeof err), -1);
    ASSERT_TEXT_HAS(err, "bin.yaml", "line 2");
}

static void test_wrong_types(void)
{
    refused("clusters: oops\n", "clusters: expected a sequence, got a scalar");
    refused("- a\n- b\n", "top level: expected a mapping");
    refused("clusters:\n- name: c\n  cluster:\n    server: [a, b]\n",
            "clusters[0].cluster.server: expected a string, got a sequence");
    refused("users:\n- name: u\n  user: {exec: {command: x, args: {a: 1}}}\n",
            "users[0].user.exec.args: expected a sequence");
    refused("clusters:\n- name: c\n  cluster: {insecure-skip-tls-verify: maybe}\n",
            "insecure-skip-tls-verify: expected a boolean");
    refused("contexts:\n- just-a-string\n", "contexts[0]: expected a mapping");
    refused("clusters:\n- name: c\n- name: c\n", "duplicate name \"c\"");
}

static void test_missing_user_and_cluster(void)
{
    kube_config_t *cfg = NULL;
    char err[512] = "";
    const char *yaml = "current-context: dev\n"
                       "clusters:\n- name: c\n  cluster: {server: 'https://h'}\n"
                       "contexts:\n- name: dev\n  context: {cluster: c, user: nobody}\n"
                       "- name: lost\n  context: {cluster: foo}\n"
                       "- name: bare\n  context: {}\n";
    refused(yaml, tpath("config"), "context \"dev\"", "user \"nobody\" not found");
    CU_ASSERT_EQUAL(load_text(yaml, "lost", &cfg, err, sizeof err), -1);
    char want[PATH_MAX + 64];
    snprintf(want, sizeof want, "kubeconfig %s: context \"lost\": cluster \"foo\" not found",
             tpath("config"));
    CU_ASSERT_STRING_EQUAL(err, want);
    CU_ASSERT_EQUAL(load_text(yaml, "bare", &cfg, err, sizeof err), -1);
    ASSERT_TEXT_HAS(err, "context \"bare\": cluster not set");
    CU_ASSERT_PTR_NULL(cfg);
}

static void test_server_checks(void)
{
    kube_config_t *cfg = NULL;
    char err[512] = "";
    refused(KC_ONE(" {server: 'api.example.com:6443'}", " {}"), "cluster \"c\"",
            "must start with https:// or http://");
    refused(KC_ONE(" {}", " {}"), "cluster \"c\": server not set");
    refused(KC_ONE(" {server: 'https:///'}", " {}"), "no host");
    /* Only one trailing slash is stripped; a path prefix is kept. */
    ASSERT_LOADS(load_text(KC_ONE(" {server: 'HTTPS://h:1/prefix/'}", " {}"), NULL, &cfg, err, sizeof err));
    CU_ASSERT_STRING_EQUAL(kube_config_rest(cfg)->server, "HTTPS://h:1/prefix");
    kube_config_destroy(&cfg);
}

static void test_tls_conflicts(void)
{
    char *ca = b64(g_cert), *crt = b64(g_cert), *k2 = b64(g_key2);
    write_file("ca.crt", g_cert);
    refused_with(KC_ONE("\n    server: https://h\n    certificate-authority: ca.crt\n"
                        "    certificate-authority-data: %s",
                        " {}"),
                 ca, "certificate-authority and certificate-authority-data are both set");
    refused_with(KC_ONE("\n    server: https://h\n    insecure-skip-tls-verify: yes\n"
                        "    certificate-authority-data: %s",
                        " {}"),
                 ca, "insecure-skip-tls-verify");
    refused_with(KC_ONE(KC_H, "\n    client-certificate-data: %s"), crt,
                 "user \"u\": client-certificate is set without client-key");

    char *y = xprintf(KC_ONE(KC_H, "\n    client-certificate-data: %s\n    client-key-data: %s"), crt, k2);
    refused(y, "do not match");
    free(y);
    free(ca);
    free(crt);
    free(k2);
}

static void test_unreadable_kubeconfig(void)
{
    kube_config_t *cfg = NULL;
    char err[512] = "";
    CU_ASSERT_EQUAL(load_path(tpath("does-not-exist"), NULL, &cfg, err, sizeof err), -1);
    ASSERT_TEXT_HAS(err, tpath("does-not-exist"), "No such file or directory");
    CU_ASSERT_EQUAL(load_path(g_dir, NULL, &cfg, err, sizeof err), -1);
    ASSERT_TEXT_HAS(err, "Is a directory");
    CU_ASSERT_PTR_NULL(cfg);
}

static void test_size_caps(void)
{
    kube_config_t *cfg = NULL;
    char err[512] = "";
    size_t big = KCFG_MAX_FILE_BYTES + 1;
    char *buf = malloc(big);
    CU_ASSERT_FATAL(buf != NULL);
    memset(buf, '#', big);
    CU_ASSERT_EQUAL(kube_config_load_buffer(buf, big, "big.yaml", NULL, &cfg, err, sizeof err),
                    -1);
    ASSERT_TEXT_HAS(err, "big.yaml: larger than");
    free(buf);

    /* Aliases that repeat one large string must not multiply memory. */
    size_t n = 200000;
    char *s = malloc(n + 1);
    CU_ASSERT_FATAL(s != NULL);
    memset(s, 'a', n);
    s[n] = '\0';
    char args[204 * sizeof(", *big")] = "";
    for (size_t i = 0, off = 0; i < 204; i++)
        off += (size_t)snprintf(args + off, sizeof args - off, "%s*big", i ? ", " : "");
    char *y = xprintf("x: &big %s\nusers:\n- name: u\n  user:\n    exec:\n      args: [%s]\n", s, args);
    refused(y, "too large or too repetitive");
    free(y);
    free(s);
}

static void test_exec_config_checks(void)
{
    kube_config_t *cfg = NULL;
    char err[512] = "";
#define EXEC_USER(lines) KC_ONE(KC_H, "\n    exec:\n" lines)
    refused(EXEC_USER("      apiVersion: client.authentication.k8s.io/v1alpha1\n      command: p"),
            "user \"u\": exec.apiVersion", "not supported");
    refused(EXEC_USER("      apiVersion: client.authentication.k8s.io/v1\n      command: p"),
            "exec.interactiveMode must be set");
    refused(EXEC_USER("      apiVersion: client.authentication.k8s.io/v1\n      command: p\n"
                      "      interactiveMode: Always"),
            "interactiveMode \"Always\"");
    refused(EXEC_USER("      apiVersion: client.authentication.k8s.io/v1beta1"), "exec.command not set");
    refused(EXEC_USER("      apiVersion: client.authentication.k8s.io/v1beta1\n      command: p\n"
                      "      env:\n      - value: x"),
            "users[0].user.exec.env[0].name");
    /* Valid: loads without running anything. */
    CU_ASSERT_EQUAL(load_text(EXEC_USER("      apiVersion: client.authentication.k8s.io/v1beta1\n      command: p"),
                              NULL, &cfg, err, sizeof err),
                    0);
    CU_ASSERT(cfg && kube_config_rest(cfg)->has_bearer == 1);
    kube_config_destroy(&cfg);
#undef EXEC_USER
}

static void test_token_control_chars(void)
{
    kube_config_t *cfg = NULL;
    char err[512] = "";
    const char *y = KC_ONE(KC_H, " {token: \"abc\\r\\nX-Evil: 1\"}");
    CU_ASSERT_EQUAL(load_text(y, NULL, &cfg, err, sizeof err), -1);
    ASSERT_TEXT_HAS(err, "user \"u\": token contains control characters");
    CU_ASSERT(strchr(err, '\n') == NULL && strchr(err, '\r') == NULL);
    CU_ASSERT_PTR_NULL(cfg);
}

static void test_auth_provider_rejected(void)
{
    refused(KC_ONE(KC_H, " {auth-provider: {name: gcp}}"), "auth-provider is not supported");
}

static void test_rfc3339(void)
{
    int64_t t = 0;
    CU_ASSERT_EQUAL(kcfg_parse_rfc3339("1970-01-01T00:00:00Z", &t), 0);
    CU_ASSERT_EQUAL(t, 0);
    CU_ASSERT_EQUAL(kcfg_parse_rfc3339("2030-01-01T00:00:00Z", &t), 0);
    CU_ASSERT_EQUAL(t, INT64_C(1893456000));
    CU_ASSERT_EQUAL(kcfg_parse_rfc3339("2024-02-29T12:34:56Z", &t), 0);
    CU_ASSERT_EQUAL(t, INT64_C(1709210096));
    CU_ASSERT_EQUAL(kcfg_parse_rfc3339("2024-02-29T12:34:56.789+02:00", &t), 0);
    CU_ASSERT_EQUAL(t, INT64_C(1709210096) - 7200);
    CU_ASSERT_EQUAL(kcfg_parse_rfc3339("2024-02-29T12:34:56-00:30", &t), 0);
    CU_ASSERT_EQUAL(t, INT64_C(1709210096) + 1800);
    CU_ASSERT_EQUAL(kcfg_parse_rfc3339("1969-12-31T23:59:59Z", &t), 0);
    CU_ASSERT_EQUAL(t, -1);
    CU_ASSERT_EQUAL(kcfg_parse_rfc3339("2023-02-29T00:00:00Z", &t), -1);
    CU_ASSERT_EQUAL(kcfg_parse_rfc3339("2024-01-01 00:00:00Z", &t), -1);
    CU_ASSERT_EQUAL(kcfg_parse_rfc3339("2024-01-01T00:00:00", &t), -1);
    CU_ASSERT_EQUAL(kcfg_parse_rfc3339("2024-01-01T00:00:00Zjunk", &t), -1);
    CU_ASSERT_EQUAL(kcfg_parse_rfc3339("2024-13-01T00:00:00Z", &t), -1);
    CU_ASSERT_EQUAL(kcfg_parse_rfc3339("2024", &t), -1);
    CU_ASSERT_EQUAL(kcfg_parse_rfc3339("", &t), -1);
}

/* ---- sources ---- */

static void test_kubeconfig_merge(void)
{
    kube_config_t *cfg = NULL;
    char err[512] = "";
    const char *tok, *cert, *key;

    write_file("a.yaml", "current-context: ctx-a\n"
                         "clusters:\n- name: shared\n  cluster: {server: 'https://from-a'}\n"
                         "users:\n- name: ua\n  user: {token: token-a}\n"
                         "contexts:\n- name: ctx-a\n  context: {cluster: shared, user: ub}\n");
    write_file("b.yaml", "current-context: ctx-b\n"
                         "clusters:\n- name: shared\n  cluster: {server: 'https://from-b'}\n"
                         "- name: only-b\n  cluster: {server: 'https://only-b'}\n"
                         "users:\n- name: ub\n  user: {token: token-b}\n"
                         "contexts:\n- name: ctx-a\n  context: {cluster: only-b, user: ub}\n"
                         "- name: ctx-b\n  context: {cluster: only-b, user: ua, "
                         "namespace: nb}\n");
    char *list = xprintf("%s::%s:%s:%s", tpath("missing.yaml"), tpath("a.yaml"),
                         tpath("b.yaml"), tpath("a.yaml"));
    kube_config_opts_t o = {.env_kubeconfig = list, .home = g_dir, .no_in_cluster = 1};

    /* current-context from a; context ctx-a from a (not b's); cluster "shared" from a;
     * user ub only in b. The missing file is skipped, the repeat ignored. */
    ASSERT_LOADS(kube_config_load(&o, &cfg, err, sizeof err));
    const kube_rest_config_t *r = kube_config_rest(cfg);
    CU_ASSERT_STRING_EQUAL(r->context, "ctx-a");
    CU_ASSERT_STRING_EQUAL(r->server, "https://from-a");
    CU_ASSERT_STRING_EQUAL(r->user, "ub");
    char *src = xprintf("%s:%s", tpath("a.yaml"), tpath("b.yaml"));
    CU_ASSERT_STRING_EQUAL(r->source, src);
    free(src);
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(tok, "token-b");
    kube_config_destroy(&cfg);

    /* --context picks a context that only b defines, whose user only a defines. */
    o.context = "ctx-b";
    ASSERT_LOADS(kube_config_load(&o, &cfg, err, sizeof err));
    r = kube_config_rest(cfg);
    CU_ASSERT_STRING_EQUAL(r->server, "https://only-b");
    CU_ASSERT_STRING_EQUAL(r->namespace_, "nb");
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(tok, "token-a");
    kube_config_destroy(&cfg);

    /* Reversed order: b's current-context and b's "shared" win. */
    free(list);
    list = xprintf("%s:%s", tpath("b.yaml"), tpath("a.yaml"));
    o.env_kubeconfig = list;
    o.context = NULL;
    ASSERT_LOADS(kube_config_load(&o, &cfg, err, sizeof err));
    CU_ASSERT_STRING_EQUAL(kube_config_rest(cfg)->context, "ctx-b");
    kube_config_destroy(&cfg);

    /* An explicit path beats $KUBECONFIG (b's own ctx-a). */
    o.kubeconfig_path = tpath("b.yaml");
    o.env_kubeconfig = tpath("a.yaml");
    o.context = "ctx-a";
    ASSERT_LOADS(kube_config_load(&o, &cfg, err, sizeof err));
    CU_ASSERT_STRING_EQUAL(kube_config_rest(cfg)->source, tpath("b.yaml"));
    CU_ASSERT_STRING_EQUAL(kube_config_rest(cfg)->server, "https://only-b");
    kube_config_destroy(&cfg);
    /* Alone, a.yaml's context names a user only b.yaml has. */
    o.kubeconfig_path = tpath("a.yaml");
    o.context = NULL;
    CU_ASSERT_EQUAL(kube_config_load(&o, &cfg, err, sizeof err), -1);
    ASSERT_TEXT_HAS(err, "context \"ctx-a\": user \"ub\" not found");
    free(list);

    /* A broken file in the list is an error naming it, not skipped. */
    write_file("broken.yaml", "clusters: [\n");
    list = xprintf("%s:%s", tpath("a.yaml"), tpath("broken.yaml"));
    o.kubeconfig_path = NULL;
    o.env_kubeconfig = list;
    CU_ASSERT_EQUAL(kube_config_load(&o, &cfg, err, sizeof err), -1);
    ASSERT_TEXT_HAS(err, tpath("broken.yaml"));
    free(list);
}

static void test_kubeconfig_all_missing(void)
{
    kube_config_t *cfg = NULL;
    char err[512] = "";
    char *list = xprintf("%s:%s", tpath("x1"), tpath("x2"));
    kube_config_opts_t o = {.env_kubeconfig = list, .home = g_dir, .no_in_cluster = 1};
    CU_ASSERT_EQUAL(kube_config_load(&o, &cfg, err, sizeof err), -1);
    CU_ASSERT_PTR_NULL(cfg);
    ASSERT_TEXT_HAS(err, "no configuration");
    free(list);
}

static void write_sa(const char *root, const char *token, const char *ns)
{
    char p[PATH_MAX + 128];
    snprintf(p, sizeof p, "%s/var/run/secrets/kubernetes.io/serviceaccount/ca.crt", root);
    write_file(p, g_cert);
    snprintf(p, sizeof p, "%s/var/run/secrets/kubernetes.io/serviceaccount/token", root);
    write_file(p, token);
    if (ns) {
        snprintf(p, sizeof p, "%s/var/run/secrets/kubernetes.io/serviceaccount/namespace",
                 root);
        write_file(p, ns);
    }
}

static void test_in_cluster(void)
{
    kube_config_t *cfg = NULL;
    char err[512] = "";
    const char *tok, *cert, *key;
    char root[1024], tokpath[PATH_MAX];

    snprintf(root, sizeof root, "%s", tpath("root"));
    snprintf(tokpath, sizeof tokpath, "%s/var/run/secrets/kubernetes.io/serviceaccount/token",
             root);
    write_sa(root, "sa-token-1\n", "operators\n");
    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    kube_config_opts_t o = {.env_kubeconfig = "", .home = g_dir, .root = root};

    CU_ASSERT_EQUAL(kube_config_load(&o, &cfg, err, sizeof err), 0);
    if (cfg) {
        const kube_rest_config_t *r = kube_config_rest(cfg);
        CU_ASSERT_STRING_EQUAL(r->server, "https://10.96.0.1:443");
        CU_ASSERT_STRING_EQUAL(r->source, "in-cluster");
        CU_ASSERT_STRING_EQUAL(r->context, "");
        CU_ASSERT_STRING_EQUAL(r->namespace_, "operators");
        CU_ASSERT_STRING_EQUAL(r->ca_pem, g_cert);
        CU_ASSERT_EQUAL(r->has_bearer, 1);
        CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), 0);
        CU_ASSERT_STRING_EQUAL(tok, "sa-token-1");
        /* The kubelet rotates the token: the next request sees the new one. */
        overwrite_with_mtime(tokpath, "sa-token-2-longer\n", 2000000000, 5);
        CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), 0);
        CU_ASSERT_STRING_EQUAL(tok, "sa-token-2-longer");
    }
    kube_config_destroy(&cfg);

    /* IPv6 service host; no namespace file -> "default"; a trailing slash on root. */
    char root2[1100];
    snprintf(root2, sizeof root2, "%s/", tpath("root2"));
    write_sa(root2, "t", NULL);
    setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    o.root = root2;
    CU_ASSERT_EQUAL(kube_config_load(&o, &cfg, err, sizeof err), 0);
    if (cfg) {
        CU_ASSERT_STRING_EQUAL(kube_config_rest(cfg)->server, "https://[fd00::1]:443");
        CU_ASSERT_STRING_EQUAL(kube_config_rest(cfg)->namespace_, "default");
    }
    kube_config_destroy(&cfg);

    /* $KUBECONFIG set: in-cluster is not considered. */
    write_file("k.yaml", SIMPLE);
    o.env_kubeconfig = tpath("k.yaml");
    CU_ASSERT_EQUAL(kube_config_load(&o, &cfg, err, sizeof err), 0);
    if (cfg)
        CU_ASSERT_STRING_EQUAL(kube_config_rest(cfg)->context, "dev");
    kube_config_destroy(&cfg);
    o.env_kubeconfig = "";

    /* Broken in-cluster files and no ~/.kube/config: the in-cluster error is reported. */
    o.root = tpath("empty-root");
    CU_ASSERT_EQUAL(kube_config_load(&o, &cfg, err, sizeof err), -1);
    ASSERT_TEXT_HAS(err, "in-cluster", "ca.crt");

    /* A bad port. */
    o.root = root;
    setenv("KUBERNETES_SERVICE_PORT", "https", 1);
    CU_ASSERT_EQUAL(kube_config_load(&o, &cfg, err, sizeof err), -1);
    ASSERT_TEXT_HAS(err, "KUBERNETES_SERVICE_PORT");

    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
}

static void test_home_fallback(void)
{
    kube_config_t *cfg = NULL;
    char err[512] = "";

    setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    kube_config_opts_t o = {.env_kubeconfig = "", .home = g_dir, .no_in_cluster = 1,
                            .root = tpath("no-root")};
    /* Nothing anywhere. */
    CU_ASSERT_EQUAL(kube_config_load(&o, &cfg, err, sizeof err), -1);
    ASSERT_TEXT_HAS(err, "no configuration: set --kubeconfig or KUBECONFIG, or run in a "
                         "cluster");
    /* ~/.kube/config is used when in-cluster is off ... */
    write_file(".kube/config", SIMPLE);
    CU_ASSERT_EQUAL(kube_config_load(&o, &cfg, err, sizeof err), 0);
    if (cfg)
        CU_ASSERT_STRING_EQUAL(kube_config_rest(cfg)->source, tpath(".kube/config"));
    kube_config_destroy(&cfg);
    /* ... and when in-cluster is on but its files are missing. */
    o.no_in_cluster = 0;
    CU_ASSERT_EQUAL(kube_config_load(&o, &cfg, err, sizeof err), 0);
    if (cfg)
        CU_ASSERT_STRING_EQUAL(kube_config_rest(cfg)->context, "dev");
    kube_config_destroy(&cfg);
    /* --context applies to the home file too. */
    o.context = "other";
    CU_ASSERT_EQUAL(kube_config_load(&o, &cfg, err, sizeof err), 0);
    if (cfg)
        CU_ASSERT_STRING_EQUAL(kube_config_rest(cfg)->context, "other");
    kube_config_destroy(&cfg);
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
}

/* ---- credentials ---- */

/* Write the token file "tok" (its path in path) with content, modified at 1000000000 s
 * and nsec ns, and load a kubeconfig whose user reads it; more: other fields of the user
 * (", token: x"). The caller destroys the configuration. */
static kube_config_t *load_token_file(char path[PATH_MAX], const char *content, long nsec, const char *more)
{
    kube_config_t *cfg = NULL;
    char err[512] = "";
    snprintf(path, PATH_MAX, "%s", tpath("tok"));
    write_file("tok", content);
    overwrite_with_mtime(path, content, 1000000000, nsec);
    char *y = xprintf(KC_ONE(KC_H, " {tokenFile: %s%s}"), path, more);
    ASSERT_LOADS(load_text(y, NULL, &cfg, err, sizeof err));
    free(y);
    return cfg;
}

static void test_token_file_rotation(void)
{
    char err[512] = "";
    const char *tok, *cert, *key;
    char path[PATH_MAX];

    kube_config_t *cfg = load_token_file(path, "  first-token \n", 1, ", token: static");
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(tok, "first-token"); /* the file wins over the static token */

    /* Different content and mtime: re-read. */
    overwrite_with_mtime(path, "second\n", 1000000000, 2);
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(tok, "second");

    /* Same size, same inode and mtime restored: the cached token is kept ... */
    overwrite_with_mtime(path, "secXnd\n", 1000000000, 2);
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(tok, "second");
    /* ... until the caller invalidates it (after a 401). */
    kube_config_credentials_invalidate(cfg);
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(tok, "secXnd");

    /* Gone: an error, and the last token is still handed out. */
    CU_ASSERT_FATAL(unlink(path) == 0);
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), -1);
    ASSERT_TEXT_HAS(err, path);
    CU_ASSERT_STRING_EQUAL(tok, "secXnd");
    /* Empty: an error too. */
    write_file("tok", "\n");
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), -1);
    ASSERT_TEXT_HAS(err, "empty");
    CU_ASSERT_STRING_EQUAL(tok, "secXnd");
    kube_config_destroy(&cfg);

    /* A missing token file (without a static fallback) fails the load. */
    refused(KC_ONE(KC_H, " {tokenFile: nope.txt}"), "tokenFile", tpath("nope.txt"));
}

/* The plugin used by the exec tests: logs each run to $COUNT_FILE, saves its
 * KUBERNETES_EXEC_INFO and arguments, prints $RESPONSE_FILE. */
static const char *PLUGIN =
    "#!/bin/sh\n"
    "echo run >> \"$COUNT_FILE\"\n"
    "printf '%s' \"$KUBERNETES_EXEC_INFO\" > \"$INFO_FILE\"\n"
    "printf '%s|%s' \"$1\" \"$2\" > \"$ARGS_FILE\"\n"
    "cat \"$RESPONSE_FILE\"\n";

/* A kubeconfig using the plugin at command (relative to the kubeconfig's directory). */
static char *exec_kubeconfig(const char *command, const char *api, const char *extra)
{
    return xprintf(KC_ONE("\n    server: https://api.test:6443\n    certificate-authority: ca.crt",
                          "\n    exec:\n"
                          "      apiVersion: %s\n      command: %s\n"
                          "      args: [first-arg, 'second arg']\n"
                          "      interactiveMode: Never\n"
                          "      installHint: install it with apt\n"
                          "      env:\n"
                          "      - {name: COUNT_FILE, value: %s}\n"
                          "      - {name: INFO_FILE, value: %s}\n"
                          "      - {name: ARGS_FILE, value: %s}\n"
                          "      - {name: RESPONSE_FILE, value: %s}\n"
                          "%s"),
                   api, command, tpath("count"), tpath("info"), tpath("args"),
                   tpath("response.json"), extra ? extra : "");
}

static void write_response(const char *api, const char *token, const char *expiry)
{
    char *j = xprintf("{\"apiVersion\":\"%s\",\"kind\":\"ExecCredential\",\"status\":"
                      "{\"token\":\"%s\"%s%s%s}}\n",
                      api, token, expiry ? ",\"expirationTimestamp\":\"" : "",
                      expiry ? expiry : "", expiry ? "\"" : "");
    write_file("response.json", j);
    free(j);
}

static kube_config_t *load_exec(const char *command, const char *api, const char *extra)
{
    kube_config_t *cfg = NULL;
    char err[512] = "";
    write_file("ca.crt", g_cert);
    char *y = exec_kubeconfig(command, api, extra);
    write_file("config", y);
    free(y);
    if (load_path(tpath("config"), NULL, &cfg, err, sizeof err))
        fprintf(stderr, "\n    load: %s\n", err);
    return cfg;
}

static void test_exec_plugin(void)
{
    char err[512] = "";
    const char *tok, *cert, *key;

    write_mode("bin/plugin.sh", PLUGIN, 0755);
    write_response("client.authentication.k8s.io/v1", "exec-token", NULL);
    kube_config_t *cfg = load_exec("./bin/plugin.sh", "client.authentication.k8s.io/v1",
                                   "      provideClusterInfo: true\n");
    CU_ASSERT_FATAL(cfg != NULL);
    CU_ASSERT_EQUAL(count_lines(tpath("count")), 0); /* nothing runs at load time */
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(tok, "exec-token");
    CU_ASSERT_PTR_NULL(cert);
    CU_ASSERT_EQUAL(count_lines(tpath("count")), 1);

    char *args = slurp(tpath("args"));
    CU_ASSERT(args && strcmp(args, "first-arg|second arg") == 0);
    free(args);

    /* KUBERNETES_EXEC_INFO: the spec, with the cluster as asked. */
    char *info = slurp(tpath("info"));
    struct json_object *j = info ? json_tokener_parse(info) : NULL, *v;
    CU_ASSERT_FATAL(j != NULL);
    CU_ASSERT(json_object_object_get_ex(j, "kind", &v) &&
              strcmp(json_object_get_string(v), "ExecCredential") == 0);
    CU_ASSERT(json_object_object_get_ex(j, "apiVersion", &v) &&
              strcmp(json_object_get_string(v), "client.authentication.k8s.io/v1") == 0);
    struct json_object *spec = NULL, *cl = NULL;
    CU_ASSERT_FATAL(json_object_object_get_ex(j, "spec", &spec));
    CU_ASSERT(json_object_object_get_ex(spec, "interactive", &v) && !json_object_get_boolean(v));
    CU_ASSERT_FATAL(json_object_object_get_ex(spec, "cluster", &cl));
    CU_ASSERT(json_object_object_get_ex(cl, "server", &v) &&
              strcmp(json_object_get_string(v), "https://api.test:6443") == 0);
    char *ca64 = b64(g_cert);
    CU_ASSERT(json_object_object_get_ex(cl, "certificate-authority-data", &v) &&
              strcmp(json_object_get_string(v), ca64) == 0);
    CU_ASSERT(json_object_object_get_ex(cl, "insecure-skip-tls-verify", &v) &&
              !json_object_get_boolean(v));
    free(ca64);
    json_object_put(j);
    free(info);

    /* No expirationTimestamp: cached for good. */
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(tok, "exec-token");
    CU_ASSERT_EQUAL(count_lines(tpath("count")), 1);
    /* Unless invalidated. */
    write_response("client.authentication.k8s.io/v1", "exec-token-2", NULL);
    kube_config_credentials_invalidate(cfg);
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(tok, "exec-token-2");
    CU_ASSERT_EQUAL(count_lines(tpath("count")), 2);
    kube_config_destroy(&cfg);
}

static void test_exec_no_cluster_info(void)
{
    char err[512] = "";
    const char *tok, *cert, *key;

    write_mode("bin/plugin.sh", PLUGIN, 0755);
    write_response("client.authentication.k8s.io/v1beta1", "b", NULL);
    /* An absolute command path, v1beta1 without interactiveMode is fine. */
    kube_config_t *cfg = load_exec(tpath("bin/plugin.sh"),
                                   "client.authentication.k8s.io/v1beta1", NULL);
    CU_ASSERT_FATAL(cfg != NULL);
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(tok, "b");
    char *info = slurp(tpath("info"));
    CU_ASSERT_PTR_NOT_NULL(info);
    ASSERT_TEXT_HAS(info, "\"spec\":{\"interactive\":false}");
    CU_ASSERT(info && strstr(info, "cluster") == NULL);
    free(info);
    kube_config_destroy(&cfg);
}

static void test_exec_expiry(void)
{
    char err[512] = "";
    const char *tok, *cert, *key;
    const int64_t expiry = INT64_C(1893456000); /* 2030-01-01T00:00:00Z */

    write_mode("bin/plugin.sh", PLUGIN, 0755);
    write_response("client.authentication.k8s.io/v1", "t1", "2030-01-01T00:00:00Z");
    kube_config_t *cfg = load_exec("bin/plugin.sh", "client.authentication.k8s.io/v1", NULL);
    CU_ASSERT_FATAL(cfg != NULL);
    kcfg_test_set_clock(fake_now);

    g_fake_now = expiry - 3600;
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(tok, "t1");
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), 0);
    CU_ASSERT_EQUAL(count_lines(tpath("count")), 1); /* an hour left: cached */

    g_fake_now = expiry - 11;
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), 0);
    CU_ASSERT_EQUAL(count_lines(tpath("count")), 1); /* 11 s left: still cached */

    write_response("client.authentication.k8s.io/v1", "t2", "2030-01-01T01:00:00Z");
    g_fake_now = expiry - 5;
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(tok, "t2");               /* within 10 s: re-run */
    CU_ASSERT_EQUAL(count_lines(tpath("count")), 2);
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), 0);
    CU_ASSERT_EQUAL(count_lines(tpath("count")), 2); /* new expiry is an hour away */
    kube_config_destroy(&cfg);

    /* A credential already expired on arrival (real clock) is re-run on every call. */
    kcfg_test_set_clock(NULL);
    write_response("client.authentication.k8s.io/v1", "old", "2001-01-01T00:00:00Z");
    cfg = load_exec("bin/plugin.sh", "client.authentication.k8s.io/v1", NULL);
    CU_ASSERT_FATAL(cfg != NULL);
    int before = count_lines(tpath("count"));
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(tok, "old");
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), 0);
    CU_ASSERT_EQUAL(count_lines(tpath("count")), before + 2);
    kube_config_destroy(&cfg);
}

static void test_exec_failure_keeps_token(void)
{
    char err[512] = "";
    const char *tok, *cert, *key;

    write_mode("bin/plugin.sh", PLUGIN, 0755);
    write_response("client.authentication.k8s.io/v1", "good", "2001-01-01T00:00:00Z");
    kube_config_t *cfg = load_exec("./bin/plugin.sh", "client.authentication.k8s.io/v1", NULL);
    CU_ASSERT_FATAL(cfg != NULL);
    /* A fake clock, moved past the failure backoff (at most 30 s) before each run. */
    kcfg_test_set_clock(fake_now);
    g_fake_now = INT64_C(1893456000);
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(tok, "good");

    /* Now the plugin fails: its stderr and the install hint are in the error, and the
     * previous token is returned. */
    write_mode("bin/plugin.sh",
               "#!/bin/sh\necho 'boom: credentials revoked' >&2\necho more >&2\nexit 3\n",
               0755);
    g_fake_now += 31;
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), -1);
    ASSERT_TEXT_HAS(err, "exec plugin \"./bin/plugin.sh\"", "exit status 3");
    ASSERT_TEXT_HAS(err, "boom: credentials revoked");
    CU_ASSERT(strstr(err, "more") == NULL); /* first line only */
    ASSERT_TEXT_HAS(err, "install it with apt");
    CU_ASSERT_STRING_EQUAL(tok, "good");

    /* Bad output: wrong apiVersion, not JSON, no token. */
    write_mode("bin/plugin.sh", "#!/bin/sh\ncat \"$RESPONSE_FILE\"\n", 0755);
    write_response("client.authentication.k8s.io/v1beta1", "x", NULL);
    g_fake_now += 31;
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), -1);
    ASSERT_TEXT_HAS(err, "apiVersion");
    write_file("response.json", "not json at all");
    g_fake_now += 31;
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), -1);
    ASSERT_TEXT_HAS(err, "invalid ExecCredential JSON");
    write_file("response.json", "{\"apiVersion\":\"client.authentication.k8s.io/v1\","
                                "\"kind\":\"ExecCredential\",\"status\":{}}");
    g_fake_now += 31;
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), -1);
    ASSERT_TEXT_HAS(err, "neither token");
    write_file("response.json", "{\"apiVersion\":\"client.authentication.k8s.io/v1\","
                                "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\"}}"
                                " trailing");
    g_fake_now += 31;
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), -1);
    ASSERT_TEXT_HAS(err, "text after the object");
    write_response("client.authentication.k8s.io/v1", "x", "yesterday");
    g_fake_now += 31;
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), -1);
    ASSERT_TEXT_HAS(err, "expirationTimestamp");
    CU_ASSERT_STRING_EQUAL(tok, "good");
    kube_config_destroy(&cfg);
    kcfg_test_set_clock(NULL);
}

/* A failing plugin is re-run after 1, 2, 4, ... up to 30 s, not on every request; the
 * calls in between get its last error at once. A success ends the backoff. */
static void test_exec_failure_backoff(void)
{
    char err[512] = "";
    const char *tok, *cert, *key;
    write_mode("bin/plugin.sh", "#!/bin/sh\necho run >> \"$COUNT_FILE\"\necho 'denied' >&2\nexit 1\n", 0755);
    kube_config_t *cfg = load_exec("./bin/plugin.sh", "client.authentication.k8s.io/v1", NULL);
    CU_ASSERT_FATAL(cfg != NULL);
    kcfg_test_set_clock(fake_now);
    const int64_t t0 = INT64_C(1893456000);
    int base = count_lines(tpath("count"));
    g_fake_now = t0;
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), -1);
    CU_ASSERT_EQUAL(count_lines(tpath("count")), base + 1);
    ASSERT_TEXT_HAS(err, "denied");
    CU_ASSERT_PTR_NULL(tok);
    /* Within the second: not run again, same error, says when. */
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), -1);
    CU_ASSERT_EQUAL(count_lines(tpath("count")), base + 1);
    ASSERT_TEXT_HAS(err, "denied", "failed 1 time in a row; next run in 1s");
    /* t0+1: run (2nd failure, next after 2 s); t0+2: not; t0+3: run (3rd, next after 4 s). */
    g_fake_now = t0 + 1;
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), -1);
    CU_ASSERT_EQUAL(count_lines(tpath("count")), base + 2);
    g_fake_now = t0 + 2;
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), -1);
    CU_ASSERT_EQUAL(count_lines(tpath("count")), base + 2);
    ASSERT_TEXT_HAS(err, "failed 2 times in a row; next run in 1s");
    g_fake_now = t0 + 3;
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), -1);
    CU_ASSERT_EQUAL(count_lines(tpath("count")), base + 3);
    /* Many failures later the wait is capped at 30 s. */
    for (int i = 0; i < 10; i++) {
        g_fake_now += 31;
        kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err);
    }
    CU_ASSERT_EQUAL(count_lines(tpath("count")), base + 13);
    g_fake_now += 29;
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), -1);
    CU_ASSERT_EQUAL(count_lines(tpath("count")), base + 13);
    ASSERT_TEXT_HAS(err, "next run in 1s");
    /* Fixed: the next run succeeds and the token is used at once. */
    write_mode("bin/plugin.sh", PLUGIN, 0755);
    write_response("client.authentication.k8s.io/v1", "back", NULL);
    g_fake_now += 1;
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(tok, "back");
    CU_ASSERT_EQUAL(count_lines(tpath("count")), base + 14);
    kube_config_destroy(&cfg);
    kcfg_test_set_clock(NULL);
}

/* The plugin at command (v1) loads, and its first run fails with every part in the error:
 * exec_refused(command, "part", ...). No token is handed out. */
#define exec_refused(command, ...) exec_refused_each((command), (const char *const[]){__VA_ARGS__, NULL})
static void exec_refused_each(const char *command, const char *const *parts)
{
    char err[512] = "";
    const char *tok, *cert, *key;
    kube_config_t *cfg = load_exec(command, "client.authentication.k8s.io/v1", NULL);
    CU_ASSERT_FATAL(cfg != NULL);
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), -1);
    text_assert_each(err, parts, 1);
    CU_ASSERT_PTR_NULL(tok);
    kube_config_destroy(&cfg);
}

static void test_exec_not_found(void)
{
    exec_refused("kcfg-no-such-plugin-anywhere", "kcfg-no-such-plugin-anywhere", "not found in $PATH",
                 "install it with apt");
    /* A path that is not executable. */
    write_mode("bin/noexec.sh", PLUGIN, 0644);
    exec_refused("bin/noexec.sh", "Permission denied");
}

static void test_exec_path_lookup(void)
{
    char err[512] = "";
    const char *tok, *cert, *key;

    write_mode("pathdir/kcfg-test-plugin", PLUGIN, 0755);
    write_response("client.authentication.k8s.io/v1", "from-path", NULL);
    const char *old = getenv("PATH");
    char *saved = old ? strdup(old) : NULL;
    char *path = xprintf("%s:%s", tpath("pathdir"), old ? old : "/usr/bin:/bin");
    setenv("PATH", path, 1);
    kube_config_t *cfg = load_exec("kcfg-test-plugin", "client.authentication.k8s.io/v1",
                                   NULL);
    CU_ASSERT(cfg != NULL);
    if (cfg) {
        CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), 0);
        CU_ASSERT_STRING_EQUAL(tok, "from-path");
    }
    kube_config_destroy(&cfg);
    if (saved)
        setenv("PATH", saved, 1);
    else
        unsetenv("PATH");
    free(saved);
    free(path);
}

static void test_exec_timeout(void)
{
    char err[512] = "";
    const char *tok, *cert, *key;
    struct timespec t0, t1;

    /* The shell's child (sleep) must die too: the whole group is killed. */
    write_mode("bin/hang.sh", "#!/bin/sh\nsleep 30\necho never\n", 0755);
    kube_config_t *cfg = load_exec("bin/hang.sh", "client.authentication.k8s.io/v1", NULL);
    CU_ASSERT_FATAL(cfg != NULL);
    kcfg_test_set_exec_timeout_ms(300);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), -1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    CU_ASSERT(secs >= 0.25 && secs < 2.0);
    ASSERT_TEXT_HAS(err, "timed out", "bin/hang.sh");
    CU_ASSERT_PTR_NULL(tok);
    kube_config_destroy(&cfg);

    /* A plugin that floods stdout is stopped at the cap. */
    write_mode("bin/flood.sh", "#!/bin/sh\nexec yes\n", 0755);
    kcfg_test_set_exec_timeout_ms(5000);
    exec_refused("bin/flood.sh", "output larger than");
}

static void test_exec_client_cert(void)
{
    char err[512] = "";
    const char *tok, *cert, *key;

    write_mode("bin/plugin.sh", PLUGIN, 0755);
    struct json_object *j = json_object_new_object(), *st = json_object_new_object();
    json_object_object_add(j, "apiVersion",
                           json_object_new_string("client.authentication.k8s.io/v1"));
    json_object_object_add(j, "kind", json_object_new_string("ExecCredential"));
    json_object_object_add(j, "status", st);
    json_object_object_add(st, "clientCertificateData", json_object_new_string(g_cert));
    json_object_object_add(st, "clientKeyData", json_object_new_string(g_key));
    write_file("response.json", json_object_to_json_string(j));

    kube_config_t *cfg = load_exec("bin/plugin.sh", "client.authentication.k8s.io/v1", NULL);
    CU_ASSERT_FATAL(cfg != NULL);
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), 0);
    CU_ASSERT_PTR_NULL(tok);
    CU_ASSERT(cert && strcmp(cert, g_cert) == 0);
    CU_ASSERT(key && strcmp(key, g_key) == 0);

    /* A key that does not match the certificate is refused. */
    json_object_object_add(st, "clientKeyData", json_object_new_string(g_key2));
    write_file("response.json", json_object_to_json_string(j));
    kube_config_credentials_invalidate(cfg);
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), -1);
    ASSERT_TEXT_HAS(err, "do not match");
    CU_ASSERT(key && strcmp(key, g_key) == 0); /* the previous pair is kept */
    json_object_put(j);
    kube_config_destroy(&cfg);
}

/* ---- registration (main() comes from cu_main.h) ---- */

/* ---- credential rules as client-go / kubectl apply them ---- */

/* One kubeconfig variant and what we do with it. The kubectl column is what the pinned
 * kubectl (tests/cluster) does with the same kubeconfig: tests/e2e/test_kubeconfig.sh
 * runs these variants through both against the real control plane. */
typedef struct {
    const char *name;
    const char *server;       /* NULL = https://api.test:6443 */
    const char *cluster;      /* more lines under cluster: */
    const char *user;         /* lines under user: ("" = an empty user entry) */
    const char *ctx_user;     /* the context's user: field; NULL = none */
    const char *https_proxy;  /* environment while loading */
    const char *no_proxy;
    const char *want_err;     /* substring of the load error; NULL = it loads */
    const char *auth;         /* kube_rest_config_t.auth_source */
    const char *token;        /* bearer token handed out; NULL = none */
    int cert;                 /* a client certificate is presented */
    int runs;                 /* exec plugin runs for one credentials() call */
    const char *headers;      /* impersonation header lines joined with '|' */
    const char *proxy;        /* proxy used; NULL = direct */
    const char *proxy_source;
    const char *kubectl;      /* what kubectl does (documentation of the row) */
} cred_case_t;

#define CERT "    client-certificate: client.crt\n    client-key: client.key\n"
#define TOKEN "    token: static-token\n"
#define TOKENFILE "    tokenFile: token.txt\n"
#define EXEC                                                                            \
    "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"                    \
    "      command: ./plugin.sh\n      interactiveMode: Never\n"

static const cred_case_t CRED_CASES[] = {
    {"cert", NULL, NULL, CERT, "u", NULL, NULL, NULL, "client-certificate", NULL, 1, 0, "",
     NULL, NULL, "the certificate's identity"},
    {"token", NULL, NULL, TOKEN, "u", NULL, NULL, NULL, "token", "static-token", 0, 0, "",
     NULL, NULL, "the token's identity"},
    {"tokenFile", NULL, NULL, TOKENFILE, "u", NULL, NULL, NULL, "tokenFile", "file-token", 0,
     0, "", NULL, NULL, "the file's token"},
    {"token+tokenFile", NULL, NULL, TOKEN TOKENFILE, "u", NULL, NULL, NULL, "tokenFile",
     "file-token", 0, 0, "", NULL, NULL, "the file wins, the token is its fallback"},
    {"exec", NULL, NULL, EXEC, "u", NULL, NULL, NULL, "exec", "exec-token", 0, 1, "", NULL,
     NULL, "runs the plugin"},
    {"cert+exec", NULL, NULL, CERT EXEC, "u", NULL, NULL, NULL, "client-certificate", NULL,
     1, 0, "", NULL, NULL, "the certificate; the plugin is not run"},
    {"token+exec", NULL, NULL, TOKEN EXEC, "u", NULL, NULL, NULL, "token", "static-token", 0,
     0, "", NULL, NULL, "the token; the plugin is not run"},
    {"tokenFile+exec", NULL, NULL, TOKENFILE EXEC, "u", NULL, NULL, NULL, "tokenFile",
     "file-token", 0, 0, "", NULL, NULL, "the file's token; the plugin is not run"},
    {"cert+token", NULL, NULL, CERT TOKEN, "u", NULL, NULL, NULL, "client-certificate+token",
     "static-token", 1, 0, "", NULL, NULL, "sends both; the API server takes the cert"},
    {"empty user entry", NULL, NULL, "", "u", NULL, NULL, NULL, "none", NULL, 0, 0, "", NULL,
     NULL, "no credential (kubectl prompts for one); we send none"},
    {"as", NULL, NULL, CERT "    as: jane\n", "u", NULL, NULL, NULL, "client-certificate",
     NULL, 1, 0, "Impersonate-User: jane", NULL, NULL, "acts as jane"},
    {"as, as-uid, as-groups, as-user-extra", NULL, NULL,
     CERT "    as: jane\n    as-uid: '1234'\n    as-groups: [dev, 'team a']\n"
          "    as-user-extra:\n      example.com/scopes: [read, write]\n"
          "      'p%c t': ['x y']\n",
     "u", NULL, NULL, NULL, "client-certificate", NULL, 1, 0,
     "Impersonate-User: jane|Impersonate-Uid: 1234|Impersonate-Group: dev|"
     "Impersonate-Group: team a|Impersonate-Extra-example.com%2Fscopes: read|"
     "Impersonate-Extra-example.com%2Fscopes: write|Impersonate-Extra-p%25c%20t: x y",
     NULL, NULL, "the same headers"},
    {"as-groups without as", NULL, NULL, CERT "    as-groups: [dev]\n", "u", NULL, NULL,
     "without impersonating a user (as)", NULL, NULL, 0, 0, NULL, NULL, NULL,
     "error: requesting uid, groups or user-extra for u without impersonating a user"},
    {"as with a newline", NULL, NULL, CERT "    as: \"jane\\nX-Evil: 1\"\n", "u", NULL, NULL,
     "as contains a control character", NULL, NULL, 0, 0, NULL, NULL, NULL,
     "refuses to send the header"},
    {"as-uid with a newline", NULL, NULL, CERT "    as: jane\n    as-uid: \"1\\nX-Evil: 1\"\n", "u", NULL,
     NULL, "as-uid contains a control character", NULL, NULL, 0, 0, NULL, NULL, NULL,
     "refuses to send the header"},
    {"as-groups with a newline", NULL, NULL, CERT "    as: jane\n    as-groups: [dev, \"a\\rb\"]\n", "u", NULL,
     NULL, "as-groups contains a control character", NULL, NULL, 0, 0, NULL, NULL, NULL,
     "refuses to send the header"},
    {"as-user-extra with a newline", NULL, NULL,
     CERT "    as: jane\n    as-user-extra:\n      k: [ok, \"x\\ny\"]\n", "u", NULL, NULL,
     "as-user-extra contains a control character", NULL, NULL, 0, 0, NULL, NULL, NULL,
     "refuses to send the header"},
    {"proxy-url wins, even for loopback", "https://127.0.0.1:6443",
     "    proxy-url: http://127.0.0.1:9\n", TOKEN, "u", "http://env-proxy:3128", NULL, NULL,
     "token", "static-token", 0, 0, "", "http://127.0.0.1:9", "proxy-url",
     "dials the proxy"},
    {"proxy-url socks5", NULL, "    proxy-url: socks5://127.0.0.1:1080\n", TOKEN, "u", NULL,
     NULL, NULL, "token", "static-token", 0, 0, "", "socks5h://127.0.0.1:1080", "proxy-url",
     "SOCKS5, names resolved by the proxy"},
    {"proxy-url ftp", NULL, "    proxy-url: ftp://127.0.0.1:21\n", TOKEN, "u", NULL, NULL,
     "unsupported scheme \"ftp\"", NULL, NULL, 0, 0, NULL, NULL, NULL, "invalid 'proxy-url'"},
    {"HTTPS_PROXY", NULL, NULL, TOKEN, "u", "proxy.test:3128", NULL, NULL, "token",
     "static-token", 0, 0, "", "http://proxy.test:3128", "HTTPS_PROXY", "uses the proxy"},
    {"HTTPS_PROXY, loopback server", "https://127.0.0.1:6443", NULL, TOKEN, "u",
     "http://proxy.test:3128", NULL, NULL, "token", "static-token", 0, 0, "", NULL, NULL,
     "direct"},
    {"HTTPS_PROXY, localhost server", "https://localhost:6443", NULL, TOKEN, "u",
     "http://proxy.test:3128", NULL, NULL, "token", "static-token", 0, 0, "", NULL, NULL,
     "direct"},
    {"HTTPS_PROXY, NO_PROXY .test", NULL, NULL, TOKEN, "u", "http://proxy.test:3128",
     "localhost,.test", NULL, "token", "static-token", 0, 0, "", NULL, NULL, "direct"},
    {"context without user", NULL, NULL, TOKEN, NULL, NULL, NULL,
     "context \"x\": user not set", NULL, NULL, 0, 0, NULL, NULL, NULL,
     "no credential: prompts for a username; without a terminal \"error: EOF\""},
    {"context with an undefined user", NULL, NULL, TOKEN, "ghost", NULL, NULL,
     "context \"x\": user \"ghost\" not found", NULL, NULL, 0, 0, NULL, NULL, NULL,
     "no credential: prompts for a username; without a terminal \"error: EOF\""},
};

static void test_credential_rules(void)
{
    write_file("client.crt", g_cert);
    write_file("client.key", g_key);
    write_file("token.txt", "file-token\n");
    write_mode("plugin.sh",
               "#!/bin/sh\necho run >> \"$(dirname \"$0\")/count\"\n"
               "echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
               "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"exec-token\"}}'\n",
               0755);
    for (size_t i = 0; i < sizeof CRED_CASES / sizeof CRED_CASES[0]; i++) {
        const cred_case_t *t = &CRED_CASES[i];
        kube_config_t *cfg = NULL;
        char err[512] = "", ctx[128] = "", hdrs[2048] = "";
        const char *tok, *cert, *key;

        unlink(tpath("count"));
        if (t->ctx_user)
            snprintf(ctx, sizeof ctx, ", user: %s", t->ctx_user);
        char *y = xprintf("current-context: x\nclusters:\n- name: c\n  cluster:\n"
                          "    server: %s\n%s"
                          "users:\n- name: u\n  user:%s\n%s"
                          "contexts:\n- name: x\n  context: {cluster: c%s}\n",
                          t->server ? t->server : "https://api.test:6443",
                          t->cluster ? t->cluster : "", t->user[0] ? "" : " {}", t->user,
                          ctx);
        write_file("config", y);
        free(y);
        for (const char *const *v = (const char *const[]){"HTTPS_PROXY", "https_proxy",
                                                             "NO_PROXY", "no_proxy", NULL};
             *v; v++)
            unsetenv(*v);
        if (t->https_proxy)
            setenv("HTTPS_PROXY", t->https_proxy, 1);
        if (t->no_proxy)
            setenv("NO_PROXY", t->no_proxy, 1);
        int rc = load_path(tpath("config"), NULL, &cfg, err, sizeof err);
        unsetenv("HTTPS_PROXY");
        unsetenv("NO_PROXY");
        if (t->want_err) {
            if (rc == 0 || strstr(err, t->want_err) == NULL)
                fprintf(stderr, "\n    %s: want error \"%s\", got rc %d \"%s\"\n", t->name,
                        t->want_err, rc, err);
            CU_ASSERT_EQUAL(rc, -1);
            ASSERT_TEXT_HAS(err, t->want_err);
            continue;
        }
        if (rc)
            fprintf(stderr, "\n    %s: %s\n", t->name, err);
        CU_ASSERT_EQUAL(rc, 0);
        if (rc)
            continue;
        const kube_rest_config_t *r = kube_config_rest(cfg);
        CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), 0);
        for (size_t h = 0; h < r->n_impersonate_headers; h++) {
            size_t off = strlen(hdrs);
            snprintf(hdrs + off, sizeof hdrs - off, "%s%s", h ? "|" : "",
                     r->impersonate_headers[h]);
        }
        int ok = strcmp(r->auth_source, t->auth) == 0 &&
                 (t->token ? tok && strcmp(tok, t->token) == 0 : tok == NULL) &&
                 (cert != NULL) == t->cert && count_lines(tpath("count")) == t->runs &&
                 strcmp(hdrs, t->headers) == 0 &&
                 (t->proxy ? r->proxy && strcmp(r->proxy, t->proxy) == 0 : r->proxy == NULL) &&
                 (t->proxy_source ? r->proxy_source &&
                                        strcmp(r->proxy_source, t->proxy_source) == 0
                                  : r->proxy_source == NULL);
        if (!ok)
            fprintf(stderr,
                    "\n    %s: auth %s token %s cert %d runs %d headers \"%s\" proxy %s (%s)\n",
                    t->name, r->auth_source, tok ? tok : "(none)", cert != NULL,
                    count_lines(tpath("count")), hdrs, r->proxy ? r->proxy : "(direct)",
                    r->proxy_source ? r->proxy_source : "-");
        CU_ASSERT(ok);
        kube_config_destroy(&cfg);
    }
}

/* A fake environment for kcfg_proxy_for: "NAME=value" entries. */
static const char *const *g_env;
static const char *fake_env(const char *name)
{
    size_t n = strlen(name);
    for (const char *const *e = g_env; e && *e; e++)
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}

static void test_proxy_from_environment(void)
{
    static const struct {
        const char *server;
        const char *env[5];
        const char *want;   /* NULL = direct */
        const char *source;
    } cases[] = {
        {"https://api.test", {"HTTPS_PROXY=http://p:1"}, "http://p:1", "HTTPS_PROXY"},
        {"https://api.test", {"https_proxy=p:1"}, "http://p:1", "https_proxy"},
        {"https://api.test", {"HTTPS_PROXY=http://P:1", "https_proxy=http://q:2"},
         "http://P:1", "HTTPS_PROXY"},
        {"https://api.test", {"HTTP_PROXY=http://p:1"}, NULL, NULL},
        {"http://api.test", {"HTTP_PROXY=http://p:1"}, "http://p:1", "HTTP_PROXY"},
        {"http://api.test", {"http_proxy=http://p:1", "REQUEST_METHOD=GET"}, NULL, NULL},
        {"https://api.test", {"HTTPS_PROXY=socks5://p:1080"}, "socks5h://p:1080",
         "HTTPS_PROXY"},
        {"https://api.test", {"HTTPS_PROXY=https://p:443"}, "https://p:443", "HTTPS_PROXY"},
        {"https://127.0.0.1:6443", {"HTTPS_PROXY=http://p:1"}, NULL, NULL},
        {"https://127.9.9.9:6443", {"HTTPS_PROXY=http://p:1"}, NULL, NULL},
        {"https://[::1]:6443", {"HTTPS_PROXY=http://p:1"}, NULL, NULL},
        {"https://LocalHost:6443", {"HTTPS_PROXY=http://p:1"}, NULL, NULL},
        {"https://localhost.test:6443", {"HTTPS_PROXY=http://p:1"}, "http://p:1",
         "HTTPS_PROXY"},
        {"https://10.1.2.3:6443", {"HTTPS_PROXY=http://p:1", "NO_PROXY=10.0.0.0/8"}, NULL,
         NULL},
        {"https://11.1.2.3:6443", {"HTTPS_PROXY=http://p:1", "NO_PROXY=10.0.0.0/8"},
         "http://p:1", "HTTPS_PROXY"},
        {"https://api.test:6443", {"HTTPS_PROXY=http://p:1", "no_proxy=*"}, NULL, NULL},
        {"https://api.test:6443", {"HTTPS_PROXY=http://p:1", "NO_PROXY=api.test:443"},
         "http://p:1", "HTTPS_PROXY"},
        {"https://api.test", {"HTTPS_PROXY=http://p:1", "NO_PROXY=api.test:443"}, NULL, NULL},
        {"https://a.api.test", {"HTTPS_PROXY=http://p:1", "NO_PROXY= x.org , API.test"}, NULL,
         NULL},
        {"https://api.test", {"HTTPS_PROXY=http://p:1", "NO_PROXY=.api.test"}, "http://p:1",
         "HTTPS_PROXY"},
        {"https://xapi.test", {"HTTPS_PROXY=http://p:1", "NO_PROXY=api.test"}, "http://p:1",
         "HTTPS_PROXY"},
        {"https://b.api.test", {"HTTPS_PROXY=http://p:1", "NO_PROXY=*.api.test"}, NULL, NULL},
        {"https://10.0.0.1:6443", {"HTTPS_PROXY=http://p:1", "NO_PROXY=10.0.0.1:6443"}, NULL,
         NULL},
        {"https://[fd00::1]:6443", {"HTTPS_PROXY=http://p:1", "NO_PROXY=fd00::/8"}, NULL,
         NULL},
        {"https://user@api.test:6443/prefix", {"HTTPS_PROXY=http://p:1", "NO_PROXY=api.test"},
         NULL, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *proxy = NULL, err[256] = "";
        const char *source = NULL;
        g_env = cases[i].env;
        int rc = kcfg_proxy_for(cases[i].server, NULL, fake_env, &proxy, &source, err,
                                sizeof err);
        int ok = rc == 0 &&
                 (cases[i].want ? proxy && strcmp(proxy, cases[i].want) == 0 : !proxy) &&
                 (cases[i].source ? source && strcmp(source, cases[i].source) == 0 : !source);
        if (!ok)
            fprintf(stderr, "\n    case %zu %s %s: got %s (%s)\n", i, cases[i].server,
                    cases[i].env[0], proxy ? proxy : "direct", source ? source : "-");
        CU_ASSERT(ok);
        free(proxy);
    }
    g_env = NULL;
    /* proxy-url: checked, wins over the environment. */
    char *proxy = NULL, err[256] = "";
    const char *source = NULL;
    static const char *const env[] = {"HTTPS_PROXY=http://p:1", NULL};
    g_env = env;
    CU_ASSERT_EQUAL(kcfg_proxy_for("https://api.test", "HTTP://q:2", fake_env, &proxy, &source,
                                   err, sizeof err), 0);
    CU_ASSERT(proxy && strcmp(proxy, "http://q:2") == 0);
    free(proxy);
    CU_ASSERT_EQUAL(kcfg_proxy_for("https://api.test", "q:2", fake_env, &proxy, &source, err,
                                   sizeof err), -1);
    ASSERT_TEXT_HAS(err, "must be http, https, or socks5");
    CU_ASSERT_PTR_NULL(proxy);
    CU_ASSERT_EQUAL(kcfg_proxy_for("https://api.test", "http://", fake_env, &proxy, &source,
                                   err, sizeof err), -1);
    ASSERT_TEXT_HAS(err, "no host");
    g_env = NULL;
}

/* The server refused the credential (401): re-run the plugin once per burst, retry the
 * rejected token no sooner than the backoff allows, re-read a token file. */
static void test_credentials_rejected(void)
{
    char err[512] = "";
    const char *tok, *cert, *key;

    write_mode("bin/plugin.sh", PLUGIN, 0755);
    write_response("client.authentication.k8s.io/v1", "t1", NULL);
    g_fake_now = 1000000;
    kcfg_test_set_clock(fake_now);
    kube_config_t *cfg = load_exec("./bin/plugin.sh", "client.authentication.k8s.io/v1", NULL);
    CU_ASSERT_FATAL(cfg != NULL);
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(tok, "t1");
    uint64_t g1 = kube_config_credentials_generation(cfg);
    CU_ASSERT_EQUAL(count_lines(tpath("count")), 1);

    /* 401 with t1: forgotten, the next request runs the plugin and gets t2. */
    write_response("client.authentication.k8s.io/v1", "t2", NULL);
    CU_ASSERT_EQUAL(kube_config_credentials_rejected(cfg, g1), 1);
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(tok, "t2");
    uint64_t g2 = kube_config_credentials_generation(cfg);
    CU_ASSERT_NOT_EQUAL(g1, g2);
    CU_ASSERT_EQUAL(count_lines(tpath("count")), 2);
    /* The rest of the burst (requests sent with t1) changes nothing. */
    for (int i = 0; i < 5; i++)
        CU_ASSERT_EQUAL(kube_config_credentials_rejected(cfg, g1), 0);
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(tok, "t2");
    CU_ASSERT_EQUAL(count_lines(tpath("count")), 2);

    /* t2 refused too, and the plugin keeps handing out t2: one run, then the backoff. */
    CU_ASSERT_EQUAL(kube_config_credentials_rejected(cfg, g2), 1);
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), -1);
    ASSERT_TEXT_HAS(err, "rejected (401)");
    CU_ASSERT_STRING_EQUAL(tok, "t2");
    CU_ASSERT_EQUAL(kube_config_credentials_generation(cfg), g2);
    CU_ASSERT_EQUAL(count_lines(tpath("count")), 3);
    for (int i = 0; i < 10; i++) { /* 10 more 401s within the second: no run */
        CU_ASSERT_EQUAL(kube_config_credentials_rejected(cfg, g2), 1);
        kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err);
        CU_ASSERT_STRING_EQUAL(tok, "t2");
    }
    CU_ASSERT_EQUAL(count_lines(tpath("count")), 3);
    g_fake_now += 1; /* the 1 s backoff is over: one more run, which brings t3 */
    write_response("client.authentication.k8s.io/v1", "t3", NULL);
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(tok, "t3");
    CU_ASSERT_EQUAL(count_lines(tpath("count")), 4);
    CU_ASSERT_NOT_EQUAL(kube_config_credentials_generation(cfg), g2);
    kube_config_destroy(&cfg);

    /* A token file: re-read after a 401 even when stat says it did not change. */
    char path[PATH_MAX];
    cfg = load_token_file(path, "aaaa\n", 5, "");
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(tok, "aaaa");
    uint64_t f1 = kube_config_credentials_generation(cfg);
    overwrite_with_mtime(path, "bbbb\n", 1000000000, 5);
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(tok, "aaaa");
    CU_ASSERT_EQUAL(kube_config_credentials_rejected(cfg, f1), 1);
    CU_ASSERT_EQUAL(kube_config_credentials(cfg, &tok, &cert, &key, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(tok, "bbbb");
    CU_ASSERT_NOT_EQUAL(kube_config_credentials_generation(cfg), f1);
    kube_config_destroy(&cfg);
}

static void test_impersonation_parse(void)
{
    kube_config_t *cfg = NULL;
    char err[512] = "";
    /* Types are checked with the field's path. */
    refused(KC_ONE(KC_H, " {as-groups: dev}"), "users[0].user.as-groups: expected a sequence");
    refused(KC_ONE(KC_H, " {as-user-extra: {k: v}}"), "as-user-extra.k: expected a sequence");
    /* An empty group is sent as an empty header (curl: "Name;"). */
    ASSERT_LOADS(load_text(KC_ONE(KC_H, " {as: a, as-groups: ['']}"),
                           NULL, &cfg, err, sizeof err));
    const kube_rest_config_t *r = kube_config_rest(cfg);
    CU_ASSERT_EQUAL_FATAL(r->n_impersonate_headers, 2);
    CU_ASSERT_STRING_EQUAL(r->impersonate_headers[1], "Impersonate-Group;");
    CU_ASSERT_STRING_EQUAL(r->impersonate_user, "a");
    kube_config_destroy(&cfg);
}

static const cu_entry_t tests[] = {
    CU_SUITE("kube_config parse"),
    {"buffer basic", test_buffer_basic},
    {"context override", test_context_override},
    {"no current-context", test_no_current_context},
    {"inline -data", test_inline_data},
    {"base64 padding", test_base64_padding},
    {"bad base64 / not PEM", test_bad_base64},
    {"files relative to the kubeconfig", test_relative_files},
    {"missing referenced file", test_missing_referenced_file},
    {"malformed YAML", test_malformed_yaml},
    {"wrong types", test_wrong_types},
    {"missing user and cluster", test_missing_user_and_cluster},
    {"server checks", test_server_checks},
    {"TLS conflicts", test_tls_conflicts},
    {"unreadable kubeconfig", test_unreadable_kubeconfig},
    {"size caps", test_size_caps},
    {"exec config checks", test_exec_config_checks},
    {"auth-provider rejected", test_auth_provider_rejected},
    {"token with control characters", test_token_control_chars},
    {"RFC 3339", test_rfc3339},
    CU_SUITE("kube_config sources"),
    {"KUBECONFIG merge", test_kubeconfig_merge},
    {"KUBECONFIG all missing", test_kubeconfig_all_missing},
    {"in-cluster", test_in_cluster},
    {"home fallback", test_home_fallback},
    CU_SUITE("kube_config credentials"),
    {"token file rotation", test_token_file_rotation},
    {"exec plugin", test_exec_plugin},
    {"exec without cluster info", test_exec_no_cluster_info},
    {"exec expiry", test_exec_expiry},
    {"exec failure keeps token", test_exec_failure_keeps_token},
    {"exec failure backoff", test_exec_failure_backoff},
    {"exec not found", test_exec_not_found},
    {"exec PATH lookup", test_exec_path_lookup},
    {"exec timeout and output cap", test_exec_timeout},
    {"exec client certificate", test_exec_client_cert},
    {"credential rules (table, as kubectl)", test_credential_rules},
    {"proxy from the environment (table)", test_proxy_from_environment},
    {"401: plugin re-run once per burst, token file re-read", test_credentials_rejected},
    {"impersonation fields", test_impersonation_parse},
};

CU_MAIN(tests)
