/* kube_config: choose the configuration source, merge kubeconfig files, resolve one
 * context into static settings, and hand out rotating credentials.
 *
 * Parsing lives in kube_config_yaml.c (YAML -> kcfg_doc_t) and plugins in
 * kube_config_exec.c. Everything a context refers to is read and checked at load time,
 * so a bad certificate or a missing file is reported once, naming the file, the entry
 * and the field, instead of surfacing later as a TLS error.
 */
#include "clock.h"
#include "kube_config.h"
#include "kube_config_internal.h"
#include "pem.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define EXEC_V1 "client.authentication.k8s.io/v1"
#define EXEC_V1BETA1 "client.authentication.k8s.io/v1beta1"

struct kube_config {
    kube_rest_config_t rest;      /* points into the strings below */
    char *server, *context, *cluster, *user, *source, *namespace_, *tls_server_name;
    char *ca_pem, *cert_pem, *key_pem;
    size_t ca_pem_len, cert_pem_len, key_pem_len;

    char *static_token;
    char *token_file;             /* absolute path, re-read when it changes */
    char *file_token;             /* last token read from token_file */
    struct stat file_token_st;    /* fstat of the read that produced file_token */
    int file_token_stale;         /* re-read on the next call whatever stat says */

    kcfg_exec_config_t *exec;     /* NULL without an exec plugin */
    char *exec_path;              /* resolved command (a path, or a name for $PATH) */
    char **exec_argv;             /* command, args..., NULL */
    char *exec_info;              /* KUBERNETES_EXEC_INFO */
    kcfg_exec_cred_t exec_cred;   /* last credential the plugin returned */
    int exec_cred_valid;          /* exec_cred holds a usable credential */
    int exec_failures;            /* runs that failed in a row */
    int64_t exec_retry_at_s;      /* no new run before this (wall clock, s) */
    char exec_last_err[512];      /* why the last run failed */
    int exec_rejected;            /* the server refused exec_cred (401): a run that
                                     brings the same credential back counts as failed */

    uint64_t cred_gen;            /* kube_config_credentials_generation */
    char *proxy_cfg;              /* the cluster's proxy-url, NULL when unset */
    char *proxy;                  /* effective proxy for curl, NULL = direct */
    char *imp_user;               /* as */
    char **imp_headers;           /* Impersonate-* lines */
    size_t n_imp_headers;
};

/* ---- shared helpers ---- */

int kcfg_read_file(const char *path, size_t cap, int regular_only, char **out,
                   size_t *len, struct stat *st_out, char *why, size_t whylen)
{
    struct stat st;
    char *buf = NULL;
    size_t used = 0, alloc = 0;
    int fd = -1, rc = -1, e = 0;

    *out = NULL;
    *len = 0;
    /* O_NONBLOCK: opening a FIFO must not wait for a writer, nor a read of a device
     * block, when only a regular file will do. It changes nothing for regular files. */
    fd = open(path, O_RDONLY | O_CLOEXEC | (regular_only ? O_NONBLOCK : 0));
    if (fd < 0 || fstat(fd, &st) != 0) {
        e = errno;
        snprintf(why, whylen, "%s", strerror(e));
        goto out;
    }
    if (S_ISDIR(st.st_mode) || (regular_only && !S_ISREG(st.st_mode))) {
        e = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
        snprintf(why, whylen, "%s", S_ISDIR(st.st_mode) ? strerror(e) : "not a regular file");
        goto out;
    }
    if (S_ISREG(st.st_mode) && (uintmax_t)st.st_size > cap) {
        e = EFBIG;
        snprintf(why, whylen, "larger than %zu bytes", cap);
        goto out;
    }
    for (;;) {
        if (used + 1 >= alloc) {
            size_t want = alloc ? alloc * 2 : 4096;
            if (want > cap + 2)
                want = cap + 2;
            char *nb = realloc(buf, want);
            if (nb == NULL) {
                e = ENOMEM;
                snprintf(why, whylen, "%s", strerror(e));
                goto out;
            }
            buf = nb;
            alloc = want;
        }
        ssize_t r = read(fd, buf + used, alloc - used - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            e = errno;
            snprintf(why, whylen, "%s", strerror(e));
            goto out;
        }
        if (r == 0)
            break;
        used += (size_t)r;
        if (used > cap) { /* it grew, or it is not a regular file */
            e = EFBIG;
            snprintf(why, whylen, "larger than %zu bytes", cap);
            goto out;
        }
    }
    if (buf == NULL && (buf = malloc(1)) == NULL) {
        e = ENOMEM;
        snprintf(why, whylen, "%s", strerror(e));
        goto out;
    }
    buf[used] = '\0';
    if (st_out)
        *st_out = st;
    *out = buf;
    *len = used;
    buf = NULL;
    rc = 0;
out:
    free(buf);
    if (fd >= 0)
        close(fd);
    if (rc)
        errno = e;
    return rc;
}

static int64_t real_now_s(void)
{
    return clock_wall_ns() / NS_PER_SEC;
}

static int64_t (*g_now_s)(void) = real_now_s;

void kcfg_test_set_clock(int64_t (*now_wall_s)(void))
{
    g_now_s = now_wall_s ? now_wall_s : real_now_s;
}

/* Remove leading and trailing whitespace in place (Go's strings.TrimSpace); returns the
 * new length. */
static size_t trim_space(char *s, size_t len)
{
    size_t start = 0;
    while (start < len && isspace((unsigned char)s[start]))
        start++;
    while (len > start && isspace((unsigned char)s[len - 1]))
        len--;
    memmove(s, s + start, len - start);
    s[len - start] = '\0';
    return len - start;
}

/* A bearer token goes into an HTTP header: refuse control characters (a newline would
 * split the header). */
static int token_ok(const char *t)
{
    for (; *t; t++)
        if ((unsigned char)*t < 0x20 || *t == 0x7f)
            return 0;
    return 1;
}

/* dir/p for a relative p, a copy of p for an absolute one. NULL when out of memory. */
static char *resolve_path(const char *dir, const char *p)
{
    if (p[0] == '/')
        return strdup(p);
    size_t dlen = strlen(dir), n = dlen + 1 + strlen(p) + 1;
    char *r = malloc(n);
    if (r)
        snprintf(r, n, "%s%s%s", dir, dlen && dir[dlen - 1] == '/' ? "" : "/", p);
    return r;
}

/* Decode base64 (whitespace ignored, padding required) into a new NUL-terminated buffer.
 * Returns 0, or -1 when the text is not base64 or memory runs out. */
static int b64_decode(const char *in, char **out, size_t *outlen)
{
    size_t n = 0, len = strlen(in);
    unsigned char *clean = malloc(len + 1), *buf = NULL;
    int rc = -1;

    *out = NULL;
    *outlen = 0;
    if (clean == NULL)
        goto out;
    for (size_t i = 0; i < len; i++)
        if (!isspace((unsigned char)in[i]))
            clean[n++] = (unsigned char)in[i];
    if (n == 0 || n % 4 != 0 || n > (size_t)KCFG_MAX_FILE_BYTES * 2)
        goto out;
    size_t pad = (clean[n - 1] == '=') + (clean[n - 2] == '=');
    for (size_t i = 0; i < n - pad; i++)
        if (clean[i] == '=') /* padding only at the end */
            goto out;
    if ((buf = malloc(n / 4 * 3 + 1)) == NULL)
        goto out;
    /* EVP_DecodeBlock counts the zero bytes that padding stands for: subtract them. */
    int r = EVP_DecodeBlock(buf, clean, (int)n);
    if (r < 0 || (size_t)r < pad)
        goto out;
    r -= (int)pad;
    buf[r] = '\0';
    *out = (char *)buf;
    *outlen = (size_t)r;
    buf = NULL;
    rc = 0;
out:
    free(clean);
    free(buf);
    return rc;
}

/* Base64 of len bytes, as a new string; NULL when out of memory. */
static char *b64_encode(const char *in, size_t len)
{
    char *out = malloc(4 * ((len + 2) / 3) + 1);
    if (out)
        EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)in, (int)len);
    return out;
}

/* ---- PEM checks (common/pem.h), so a bad blob is reported with its field ---- */

/* NULL when cert and key are usable PEM and belong together, else why not. */
static const char *pem_pair_problem(const char *cert, size_t clen, const char *key,
                                    size_t klen)
{
    switch (pem_pair_check(cert, clen, key, klen)) {
    case PEM_PAIR_NO_CERT:
        return "client certificate: no PEM certificate found";
    case PEM_PAIR_NO_KEY:
        return "client key: no PEM private key found (encrypted keys are not supported)";
    case PEM_PAIR_MISMATCH:
        return "client certificate and client key do not match";
    case PEM_PAIR_OK:
        break;
    }
    return NULL;
}

/* ---- building the configuration ---- */

void kube_config_destroy(kube_config_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    kube_config_t *c = *self_p;
    free(c->server);
    free(c->context);
    free(c->cluster);
    free(c->user);
    free(c->source);
    free(c->namespace_);
    free(c->tls_server_name);
    free(c->ca_pem);
    free(c->cert_pem);
    free(c->key_pem);
    free(c->static_token);
    free(c->token_file);
    free(c->file_token);
    kcfg_exec_config_free(c->exec);
    free(c->exec_path);
    free(c->exec_argv);   /* its strings belong to exec */
    free(c->exec_info);
    kcfg_exec_cred_clear(&c->exec_cred);
    free(c->proxy_cfg);
    free(c->proxy);
    free(c->imp_user);
    kcfg_free_lines(c->imp_headers, c->n_imp_headers);
    free(c);
    *self_p = NULL;
}

/* Point rest at the owned strings. */
static void publish_rest(kube_config_t *c)
{
    kube_rest_config_t *r = &c->rest;
    r->server = c->server;
    r->context = c->context;
    r->cluster = c->cluster;
    r->user = c->user;
    r->source = c->source;
    r->namespace_ = c->namespace_;
    r->ca_pem = c->ca_pem;
    r->ca_pem_len = c->ca_pem_len;
    r->tls_server_name = c->tls_server_name;
    r->client_cert_pem = c->cert_pem;
    r->client_cert_pem_len = c->cert_pem_len;
    r->client_key_pem = c->key_pem;
    r->client_key_pem_len = c->key_pem_len;
    r->has_bearer = c->static_token || c->token_file || c->exec;
    if (strcmp(c->source, "in-cluster") == 0)
        r->auth_source = "in-cluster";
    else if (c->exec)
        r->auth_source = "exec";
    else if (c->cert_pem)
        r->auth_source = c->token_file     ? "client-certificate+tokenFile"
                         : c->static_token ? "client-certificate+token"
                                           : "client-certificate";
    else
        r->auth_source = c->token_file ? "tokenFile" : c->static_token ? "token" : "none";
    r->proxy = c->proxy;
    r->impersonate_user = c->imp_user;
    r->impersonate_headers = (const char *const *)c->imp_headers;
    r->n_impersonate_headers = c->n_imp_headers;
}

/* Go's os.Getenv for kcfg_proxy_for. */
static const char *env_get(const char *name)
{
    return getenv(name);
}

/* The proxy for c->server (proxy-url, else the environment), once, at load. */
static int resolve_proxy(kube_config_t *c, const char *where, char *err, size_t errlen)
{
    char why[512];
    const char *source = NULL;
    if (kcfg_proxy_for(c->server, c->proxy_cfg, env_get, &c->proxy, &source, why,
                       sizeof why)) {
        kcfg_errf(err, errlen, "%s: %s", where, why);
        return -1;
    }
    c->rest.proxy_source = source; /* a string constant */
    return 0;
}

static int set_str(char **dst, const char *src)
{
    *dst = strdup(src ? src : "");
    return *dst ? 0 : -1;
}

/* Report running out of memory while working on where; returns -1. */
static int oom(char *err, size_t errlen, const char *where)
{
    kcfg_errf(err, errlen, "%s: out of memory", where);
    return -1;
}

/* Read a file named in a kubeconfig (CA, certificate, key) into *out. where prefixes
 * the error: "kubeconfig F: cluster \"c\"". */
static int read_ref(const char *where, const char *field, const char *path, char **out,
                    size_t *len, char *err, size_t errlen)
{
    char why[128];
    if (kcfg_read_file(path, KCFG_MAX_FILE_BYTES, 1, out, len, NULL, why, sizeof why)) {
        kcfg_errf(err, errlen, "%s: %s %s: %s", where, field, path, why);
        return -1;
    }
    return 0;
}

/* One PEM blob from either "<field>" (a path relative to dir) or "<field>-data"
 * (base64). Both set is an error, as in kubectl. *out stays NULL when neither is. */
static int load_blob(const char *where, const char *field, const char *dir,
                     const char *file, const char *data, char **out, size_t *len,
                     char *err, size_t errlen)
{
    *out = NULL;
    *len = 0;
    if (file && !file[0])
        file = NULL;
    if (data && !data[0])
        data = NULL;
    if (file && data) {
        kcfg_errf(err, errlen, "%s: %s and %s-data are both set", where, field, field);
        return -1;
    }
    if (data) {
        if (b64_decode(data, out, len)) {
            kcfg_errf(err, errlen, "%s: %s-data: invalid base64", where, field);
            return -1;
        }
        return 0;
    }
    if (file) {
        char *path = resolve_path(dir, file);
        int rc = path ? read_ref(where, field, path, out, len, err, errlen) : -1;
        if (path == NULL)
            kcfg_errf(err, errlen, "%s: %s: out of memory", where, field);
        free(path);
        return rc;
    }
    return 0;
}

/* server, CA, TLS options of the cluster entry cl (from file doc). */
static int resolve_cluster(kube_config_t *c, const kcfg_cluster_t *cl, const kcfg_doc_t *doc,
                           char *err, size_t errlen)
{
    char where[512];
    snprintf(where, sizeof where, "kubeconfig %s: cluster \"%s\"", doc->path, cl->name);

    const char *s = cl->server;
    if (s == NULL || s[0] == '\0') {
        kcfg_errf(err, errlen, "%s: server not set", where);
        return -1;
    }
    size_t skip = strncasecmp(s, "https://", 8) == 0 ? 8
                : strncasecmp(s, "http://", 7) == 0  ? 7 : 0;
    if (skip == 0) {
        kcfg_errf(err, errlen, "%s: server \"%s\" must start with https:// or http://", where,
                  s);
        return -1;
    }
    for (const char *p = s; *p; p++)
        if (isspace((unsigned char)*p) || (unsigned char)*p < 0x20) {
            kcfg_errf(err, errlen, "%s: server \"%s\" contains whitespace", where, s);
            return -1;
        }
    size_t len = strlen(s);
    if (len > skip && s[len - 1] == '/')
        len--; /* one trailing slash, as rest.Config tolerates */
    if (len == skip || s[skip] == '/') {
        kcfg_errf(err, errlen, "%s: server \"%s\" has no host", where, s);
        return -1;
    }
    if ((c->server = strndup(s, len)) == NULL)
        return oom(err, errlen, where);

    if (load_blob(where, "certificate-authority", doc->dir, cl->certificate_authority,
                  cl->certificate_authority_data, &c->ca_pem, &c->ca_pem_len, err, errlen))
        return -1;
    if (c->ca_pem) {
        X509 *x = pem_cert(c->ca_pem, c->ca_pem_len);
        if (x == NULL) {
            kcfg_errf(err, errlen, "%s: certificate-authority%s: no PEM certificate found",
                      where, cl->certificate_authority_data ? "-data" : "");
            return -1;
        }
        X509_free(x);
    }
    if (cl->insecure_skip_tls_verify && c->ca_pem) {
        kcfg_errf(err, errlen, "%s: insecure-skip-tls-verify cannot be combined with a "
                               "certificate-authority", where);
        return -1;
    }
    c->rest.insecure_skip_tls_verify = cl->insecure_skip_tls_verify;
    if (cl->tls_server_name && cl->tls_server_name[0] &&
        (c->tls_server_name = strdup(cl->tls_server_name)) == NULL)
        return oom(err, errlen, where);
    if (cl->proxy_url && cl->proxy_url[0] && (c->proxy_cfg = strdup(cl->proxy_url)) == NULL)
        return oom(err, errlen, where);
    return resolve_proxy(c, where, err, errlen);
}

/* KUBERNETES_EXEC_INFO for the plugin: the ExecCredential spec client-go sends. Returns
 * a new string or NULL when out of memory. */
static char *build_exec_info(const kube_config_t *c, const kcfg_exec_config_t *e)
{
    struct json_object *root = json_object_new_object(), *spec, *cl;
    char *out = NULL, *ca_b64 = NULL;

    if (root == NULL || (spec = json_object_new_object()) == NULL)
        goto out;
    json_object_object_add(root, "apiVersion", json_object_new_string(e->api_version));
    json_object_object_add(root, "kind", json_object_new_string("ExecCredential"));
    json_object_object_add(root, "spec", spec); /* root owns spec from here on */
    json_object_object_add(spec, "interactive", json_object_new_boolean(0));
    if (e->provide_cluster_info) {
        if ((cl = json_object_new_object()) == NULL)
            goto out;
        json_object_object_add(spec, "cluster", cl);
        json_object_object_add(cl, "server", json_object_new_string(c->server));
        if (c->tls_server_name)
            json_object_object_add(cl, "tls-server-name",
                                   json_object_new_string(c->tls_server_name));
        json_object_object_add(cl, "insecure-skip-tls-verify",
                               json_object_new_boolean(c->rest.insecure_skip_tls_verify));
        if (c->ca_pem) {
            if ((ca_b64 = b64_encode(c->ca_pem, c->ca_pem_len)) == NULL)
                goto out;
            json_object_object_add(cl, "certificate-authority-data",
                                   json_object_new_string(ca_b64));
        }
    }
    const char *s = json_object_to_json_string_ext(
        root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    out = s ? strdup(s) : NULL;
out:
    json_object_put(root);
    free(ca_b64);
    return out;
}

/* Take the exec section from the user entry (u->exec is moved into c). */
static int resolve_exec(kube_config_t *c, kcfg_user_t *u, const kcfg_doc_t *doc,
                        const char *where, char *err, size_t errlen)
{
    kcfg_exec_config_t *e = u->exec;
    const char *v = e->api_version ? e->api_version : "";

    if (strcmp(v, EXEC_V1) != 0 && strcmp(v, EXEC_V1BETA1) != 0) {
        kcfg_errf(err, errlen, "%s: exec.apiVersion \"%s\" is not supported (want %s or %s)",
                  where, v, EXEC_V1, EXEC_V1BETA1);
        return -1;
    }
    if (e->command == NULL || e->command[0] == '\0') {
        kcfg_errf(err, errlen, "%s: exec.command not set", where);
        return -1;
    }
    const char *mode = e->interactive_mode;
    if (mode == NULL && strcmp(v, EXEC_V1) == 0) {
        kcfg_errf(err, errlen, "%s: exec.interactiveMode must be set for %s", where, EXEC_V1);
        return -1;
    }
    if (mode && strcmp(mode, "Never") != 0 && strcmp(mode, "IfAvailable") != 0) {
        kcfg_errf(err, errlen, "%s: exec.interactiveMode \"%s\" is not supported: plugins "
                               "run without a terminal (use Never or IfAvailable)", where, mode);
        return -1;
    }
    u->exec = NULL;
    c->exec = e;
    /* A command with a slash is relative to the kubeconfig's directory, as in kubectl; a
     * bare name is looked up in $PATH when it runs. */
    c->exec_path = strchr(e->command, '/') ? resolve_path(doc->dir, e->command)
                                           : strdup(e->command);
    c->exec_argv = calloc(e->n_args + 2, sizeof *c->exec_argv);
    c->exec_info = build_exec_info(c, e);
    if (c->exec_path == NULL || c->exec_argv == NULL || c->exec_info == NULL) {
        kcfg_errf(err, errlen, "%s: exec: out of memory", where);
        return -1;
    }
    c->exec_argv[0] = e->command;
    for (size_t i = 0; i < e->n_args; i++)
        c->exec_argv[i + 1] = e->args[i];
    return 0;
}

/* The client certificate and key of u: both or neither, and a pair that belongs
 * together. 0, or -1 with err. */
static int resolve_client_cert(kube_config_t *c, const kcfg_user_t *u, const kcfg_doc_t *doc,
                               const char *where, char *err, size_t errlen)
{
    if (load_blob(where, "client-certificate", doc->dir, u->client_certificate,
                  u->client_certificate_data, &c->cert_pem, &c->cert_pem_len, err, errlen) ||
        load_blob(where, "client-key", doc->dir, u->client_key, u->client_key_data,
                  &c->key_pem, &c->key_pem_len, err, errlen))
        return -1;
    if ((c->cert_pem == NULL) != (c->key_pem == NULL)) {
        kcfg_errf(err, errlen, "%s: %s is set without %s", where,
                  c->cert_pem ? "client-certificate" : "client-key",
                  c->cert_pem ? "client-key" : "client-certificate");
        return -1;
    }
    const char *why = c->cert_pem ? pem_pair_problem(c->cert_pem, c->cert_pem_len, c->key_pem,
                                                     c->key_pem_len)
                                  : NULL;
    if (why) {
        kcfg_errf(err, errlen, "%s: %s", where, why);
        return -1;
    }
    return 0;
}

/* Read the token file now, so that a missing one fails the load as client-go's does. */
static int read_token_file(kube_config_t *c, const char *where, char *err, size_t errlen)
{
    char why[128];
    size_t len;
    if (kcfg_read_file(c->token_file, KCFG_MAX_FILE_BYTES, 1, &c->file_token, &len,
                       &c->file_token_st, why, sizeof why)) {
        kcfg_errf(err, errlen, "%s: tokenFile %s: %s", where, c->token_file, why);
        return -1;
    }
    if (trim_space(c->file_token, len) == 0 || !token_ok(c->file_token)) {
        kcfg_errf(err, errlen, "%s: tokenFile %s is empty or contains control "
                               "characters", where, c->token_file);
        return -1;
    }
    return 0;
}

/* The token and the token file of u. 0, or -1 with err. */
static int resolve_tokens(kube_config_t *c, const kcfg_user_t *u, const kcfg_doc_t *doc,
                          const char *where, char *err, size_t errlen)
{
    if (u->token && u->token[0]) {
        if (!token_ok(u->token)) {
            kcfg_errf(err, errlen, "%s: token contains control characters", where);
            return -1;
        }
        if ((c->static_token = strdup(u->token)) == NULL)
            return oom(err, errlen, where);
    }
    if (!(u->token_file && u->token_file[0]))
        return 0;
    if ((c->token_file = resolve_path(doc->dir, u->token_file)) == NULL)
        return oom(err, errlen, where);
    /* With a static token as fallback the file may appear later. */
    return c->static_token ? 0 : read_token_file(c, where, err, errlen);
}

/* Credentials of the user entry u (from file doc). Needs the cluster resolved first
 * (exec plugins may be given the cluster). */
static int resolve_user(kube_config_t *c, kcfg_user_t *u, const kcfg_doc_t *doc,
                        char *err, size_t errlen)
{
    char where[512];
    snprintf(where, sizeof where, "kubeconfig %s: user \"%s\"", doc->path, u->name);

    if (resolve_client_cert(c, u, doc, where, err, errlen) ||
        resolve_tokens(c, u, doc, where, err, errlen))
        return -1;
    /* client-go's exec authenticator steps aside when the transport already has a
     * token, a token file or a client certificate: kubectl does not run the plugin then,
     * and neither do we. */
    int has_static = c->static_token || c->token_file || c->cert_pem;
    if (u->exec && !has_static && resolve_exec(c, u, doc, where, err, errlen))
        return -1;
    if (kcfg_impersonation_headers(u, where, &c->imp_headers, &c->n_imp_headers, err,
                                   errlen))
        return -1;
    if (u->as && u->as[0] && (c->imp_user = strdup(u->as)) == NULL)
        return oom(err, errlen, where);
    if (u->has_auth_provider && !has_static && !c->exec) {
        kcfg_errf(err, errlen, "%s: auth-provider is not supported (use an exec plugin)",
                  where);
        return -1;
    }
    return 0;
}

/* Lookups across merged files: the first file that defines a name wins, as when
 * kubectl merges $KUBECONFIG. Each returns the entry and its file, or NULL. */
#define DEFINE_FIND(fn, type, array, count)                                                                    \
    static type *fn(kcfg_doc_t **docs, size_t n, const char *name, kcfg_doc_t **doc)                           \
    {                                                                                                          \
        for (size_t i = 0; i < n; i++)                                                                         \
            for (size_t j = 0; j < docs[i]->count; j++)                                                        \
                if (strcmp(docs[i]->array[j].name, name) == 0) {                                               \
                    *doc = docs[i];                                                                            \
                    return &docs[i]->array[j];                                                                 \
                }                                                                                              \
        return NULL;                                                                                           \
    }
DEFINE_FIND(find_context, kcfg_context_t, contexts, n_contexts)
DEFINE_FIND(find_cluster, kcfg_cluster_t, clusters, n_clusters)
DEFINE_FIND(find_user, kcfg_user_t, users, n_users)
#undef DEFINE_FIND

/* The end of a load (resolve, load_in_cluster): when rc is 0, c's REST view published
 * and c handed to *out; otherwise c destroyed and *out NULL. Returns rc. */
static int hand_over(kube_config_t *c, int rc, kube_config_t **out)
{
    if (rc == 0)
        publish_rest(c);
    else
        kube_config_destroy(&c);
    *out = c;
    return rc;
}

/* Resolve one context of the merged docs into a new configuration. */
static int resolve(kcfg_doc_t **docs, size_t n, const char *source, const char *ctx_override,
                   kube_config_t **out, char *err, size_t errlen)
{
    kube_config_t *c = NULL;
    const char *name = ctx_override && ctx_override[0] ? ctx_override : NULL;
    kcfg_context_t *ctx;
    kcfg_cluster_t *cl;
    kcfg_user_t *u = NULL;
    kcfg_doc_t *ctx_doc = NULL, *cl_doc = NULL, *u_doc = NULL;
    int rc = -1;

    *out = NULL;
    for (size_t i = 0; i < n && name == NULL; i++)
        if (docs[i]->current_context && docs[i]->current_context[0])
            name = docs[i]->current_context;
    if (name == NULL) {
        kcfg_errf(err, errlen, "kubeconfig %s: no context: current-context is not set and no "
                               "--context was given", source);
        goto out;
    }
    ctx = find_context(docs, n, name, &ctx_doc);
    if (ctx == NULL) {
        kcfg_errf(err, errlen, "kubeconfig %s: context \"%s\" not found", source, name);
        goto out;
    }
    if (ctx->cluster == NULL || ctx->cluster[0] == '\0') {
        kcfg_errf(err, errlen, "kubeconfig %s: context \"%s\": cluster not set", ctx_doc->path,
                  name);
        goto out;
    }
    cl = find_cluster(docs, n, ctx->cluster, &cl_doc);
    if (cl == NULL) {
        kcfg_errf(err, errlen, "kubeconfig %s: context \"%s\": cluster \"%s\" not found",
                  ctx_doc->path, name, ctx->cluster);
        goto out;
    }
    if (ctx->user && ctx->user[0])
        u = find_user(docs, n, ctx->user, &u_doc);
    if ((c = calloc(1, sizeof *c)) == NULL || set_str(&c->context, name) ||
        set_str(&c->cluster, cl->name) || set_str(&c->user, u ? u->name : "") ||
        set_str(&c->source, source) ||
        set_str(&c->namespace_, ctx->namespace_ && ctx->namespace_[0] ? ctx->namespace_
                                                                        : "default")) {
        kcfg_errf(err, errlen, "kubeconfig %s: out of memory", source);
        goto out;
    }
    if (resolve_cluster(c, cl, cl_doc, err, errlen))
        goto out;
    /* Without a user entry kubectl has no credential and prompts for one; a daemon
     * cannot, so it is an error here (kube_config.h). */
    if (ctx->user == NULL || ctx->user[0] == '\0') {
        kcfg_errf(err, errlen, "kubeconfig %s: context \"%s\": user not set", ctx_doc->path,
                  name);
        goto out;
    }
    if (u == NULL) {
        kcfg_errf(err, errlen, "kubeconfig %s: context \"%s\": user \"%s\" not found",
                  ctx_doc->path, name, ctx->user);
        goto out;
    }
    if (resolve_user(c, u, u_doc, err, errlen))
        goto out;
    rc = 0;
out:
    return hand_over(c, rc, out);
}

/* Load the kubeconfig files in paths (in precedence order) and resolve a context.
 * skip_missing: files that do not exist are skipped ($KUBECONFIG); at least one must. */
static int load_files(char **paths, size_t n, int skip_missing, const char *context,
                      kube_config_t **out, char *err, size_t errlen)
{
    kcfg_doc_t **docs = calloc(n ? n : 1, sizeof *docs);
    size_t n_docs = 0, srclen = 1;
    char *source = NULL;
    int rc = -1;

    *out = NULL;
    if (docs == NULL) {
        kcfg_errf(err, errlen, "kubeconfig: out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        char *buf, why[128];
        size_t len;
        if (kcfg_read_file(paths[i], KCFG_MAX_FILE_BYTES, 0, &buf, &len, NULL, why,
                           sizeof why)) {
            if (skip_missing && errno == ENOENT)
                continue;
            kcfg_errf(err, errlen, "kubeconfig %s: %s", paths[i], why);
            goto out;
        }
        int prc = kcfg_doc_parse(buf, len, paths[i], &docs[n_docs], err, errlen);
        free(buf);
        if (prc)
            goto out;
        srclen += strlen(paths[i]) + 1;
        n_docs++;
    }
    if (n_docs == 0) {
        kcfg_errf(err, errlen, "no configuration: none of the files in KUBECONFIG exist "
                               "(set --kubeconfig or KUBECONFIG, or run in a cluster)");
        goto out;
    }
    if ((source = calloc(1, srclen)) == NULL) {
        kcfg_errf(err, errlen, "kubeconfig: out of memory");
        goto out;
    }
    for (size_t i = 0, off = 0; i < n_docs; i++) {
        int w = snprintf(source + off, srclen - off, "%s%s", i ? ":" : "", docs[i]->path);
        off += w > 0 ? (size_t)w : 0;
    }
    rc = resolve(docs, n_docs, source, context, out, err, errlen);
out:
    for (size_t i = 0; docs && i < n_docs; i++)
        kcfg_doc_destroy(&docs[i]);
    free(docs);
    free(source);
    return rc;
}

/* Split a colon-separated list, dropping empty entries and repeats. */
static char **split_list(const char *list, size_t *count)
{
    size_t max = 1, n = 0;
    for (const char *p = list; *p; p++)
        max += *p == ':';
    char **v = calloc(max, sizeof *v);
    if (v == NULL)
        return NULL;
    for (const char *p = list;;) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        int dup = len == 0;
        for (size_t i = 0; i < n && !dup; i++)
            dup = strlen(v[i]) == len && memcmp(v[i], p, len) == 0;
        if (!dup && (v[n++] = strndup(p, len)) == NULL) {
            for (size_t i = 0; i + 1 < n; i++)
                free(v[i]);
            free(v);
            return NULL;
        }
        if (colon == NULL)
            break;
        p = colon + 1;
    }
    *count = n;
    return v;
}

static void free_list(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

/* path = rootdir + SA_DIR + "/" + name; -1 (with the error set) when it does not fit. */
static int sa_path(char *path, size_t len, const char *rootdir, const char *name, char *err,
                   size_t errlen)
{
    int n = snprintf(path, len, "%s" SA_DIR "/%s", rootdir, name);
    if (n < 0 || (size_t)n >= len) {
        kcfg_errf(err, errlen, "in-cluster: root directory \"%.64s...\" is too long", rootdir);
        return -1;
    }
    return 0;
}

/* In-cluster configuration from the service-account files under root. */
/* c->server from KUBERNETES_SERVICE_HOST and _PORT. Returns 0, or -1 with err. */
static int in_cluster_server(kube_config_t *c, const char *host, const char *port, char *err,
                             size_t errlen)
{
    char *end;
    errno = 0;
    long portnum = strtol(port, &end, 10);
    if (errno || end == port || *end || portnum < 1 || portnum > 65535) {
        kcfg_errf(err, errlen, "in-cluster: KUBERNETES_SERVICE_PORT \"%s\" is not a port",
                  port);
        return -1;
    }
    /* An IPv6 address needs brackets in a URL. */
    int v6 = strchr(host, ':') != NULL && host[0] != '[';
    size_t slen = strlen(host) + strlen(port) + 16;
    if ((c->server = malloc(slen)) == NULL)
        return oom(err, errlen, "in-cluster");
    snprintf(c->server, slen, v6 ? "https://[%s]:%s" : "https://%s:%s", host, port);
    return 0;
}

/* The service account's CA (rootdir/ca.crt), which must hold a PEM certificate. Returns
 * 0, or -1 with err. */
static int in_cluster_ca(kube_config_t *c, const char *rootdir, char *err, size_t errlen)
{
    char path[4096], why[128];
    if (sa_path(path, sizeof path, rootdir, "ca.crt", err, errlen))
        return -1;
    if (kcfg_read_file(path, KCFG_MAX_FILE_BYTES, 1, &c->ca_pem, &c->ca_pem_len, NULL, why,
                       sizeof why)) {
        kcfg_errf(err, errlen, "in-cluster: CA %s: %s", path, why);
        return -1;
    }
    X509 *x = pem_cert(c->ca_pem, c->ca_pem_len);
    if (x == NULL) {
        kcfg_errf(err, errlen, "in-cluster: CA %s: no PEM certificate found", path);
        return -1;
    }
    X509_free(x);
    return 0;
}

/* The service account's token (rootdir/token): read now (a pod without one is
 * misconfigured) and again whenever the kubelet rotates the file. Returns 0, or -1 with
 * err. */
static int in_cluster_token(kube_config_t *c, const char *rootdir, char *err, size_t errlen)
{
    char path[4096], why[128];
    size_t len;
    if (sa_path(path, sizeof path, rootdir, "token", err, errlen))
        return -1;
    if ((c->token_file = strdup(path)) == NULL)
        return oom(err, errlen, "in-cluster");
    if (kcfg_read_file(path, KCFG_MAX_FILE_BYTES, 1, &c->file_token, &len, &c->file_token_st,
                       why, sizeof why)) {
        kcfg_errf(err, errlen, "in-cluster: token %s: %s", path, why);
        return -1;
    }
    if (trim_space(c->file_token, len) == 0 || !token_ok(c->file_token)) {
        kcfg_errf(err, errlen, "in-cluster: token %s is empty or contains control characters",
                  path);
        return -1;
    }
    return 0;
}

/* The pod's namespace (rootdir/namespace); "default" when the file is missing or empty.
 * Returns 0, or -1 with err (out of memory). */
static int in_cluster_namespace(kube_config_t *c, const char *rootdir, char *err, size_t errlen)
{
    char path[4096], why[128], *ns = NULL;
    size_t len;
    if (sa_path(path, sizeof path, rootdir, "namespace", err, errlen))
        return -1;
    if (kcfg_read_file(path, 4096, 1, &ns, &len, NULL, why, sizeof why) == 0 &&
        trim_space(ns, len) > 0) {
        c->namespace_ = ns;
        return 0;
    }
    free(ns);
    return set_str(&c->namespace_, "default") ? oom(err, errlen, "in-cluster") : 0;
}

static int load_in_cluster(const char *root, const char *host, const char *port,
                           kube_config_t **out, char *err, size_t errlen)
{
    kube_config_t *c = NULL;
    char *rootdir = NULL;
    size_t rlen = strlen(root);
    int rc = -1;

    *out = NULL;
    while (rlen > 0 && root[rlen - 1] == '/')
        rlen--;
    if ((c = calloc(1, sizeof *c)) == NULL || (rootdir = strndup(root, rlen)) == NULL ||
        set_str(&c->context, "") || set_str(&c->cluster, "") || set_str(&c->user, "") ||
        set_str(&c->source, "in-cluster")) {
        oom(err, errlen, "in-cluster");
        goto out;
    }
    if (in_cluster_server(c, host, port, err, errlen) || in_cluster_ca(c, rootdir, err, errlen) ||
        in_cluster_token(c, rootdir, err, errlen) || in_cluster_namespace(c, rootdir, err, errlen) ||
        resolve_proxy(c, "in-cluster", err, errlen))
        goto out;
    rc = 0;
out:
    free(rootdir);
    return hand_over(c, rc, out);
}

/* $HOME, else the password database. NULL when there is none. */
static const char *home_dir(const char *given, char *buf, size_t len)
{
    if (given && given[0])
        return given;
    const char *h = getenv("HOME");
    if (h && h[0])
        return h;
    struct passwd pw, *res = NULL;
    char pwbuf[4096];
    if (getpwuid_r(getuid(), &pw, pwbuf, sizeof pwbuf, &res) == 0 && res && pw.pw_dir &&
        pw.pw_dir[0]) {
        snprintf(buf, len, "%s", pw.pw_dir);
        return buf;
    }
    return NULL;
}

int kube_config_load(const kube_config_opts_t *opts, kube_config_t **out,
                     char *err, size_t errlen)
{
    static const kube_config_opts_t defaults;
    char ic_err[1024] = "", homebuf[1024], path[4096];
    char **list = NULL;
    size_t n = 0;
    int rc = -1;

    assert(out);
    *out = NULL;
    if (opts == NULL)
        opts = &defaults;

    if (opts->kubeconfig_path && opts->kubeconfig_path[0]) {
        char *one = (char *)opts->kubeconfig_path;
        return load_files(&one, 1, 0, opts->context, out, err, errlen);
    }

    const char *env = opts->env_kubeconfig ? opts->env_kubeconfig : getenv("KUBECONFIG");
    if (env && env[0]) {
        if ((list = split_list(env, &n)) == NULL) {
            kcfg_errf(err, errlen, "KUBECONFIG: out of memory");
            goto out;
        }
        rc = load_files(list, n, 1, opts->context, out, err, errlen);
        goto out;
    }

    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    if (!opts->no_in_cluster && host && host[0] && port && port[0]) {
        if (load_in_cluster(opts->root ? opts->root : "", host, port, out, ic_err,
                            sizeof ic_err) == 0) {
            rc = 0;
            goto out;
        }
    }

    /* Last, ~/.kube/config: used if it exists; otherwise say what was tried. */
    const char *home = home_dir(opts->home, homebuf, sizeof homebuf);
    struct stat st;
    if (home && (size_t)snprintf(path, sizeof path, "%s/.kube/config", home) < sizeof path &&
        stat(path, &st) == 0) {
        char *one = path;
        rc = load_files(&one, 1, 0, opts->context, out, err, errlen);
        goto out;
    }
    if (ic_err[0])
        kcfg_errf(err, errlen, "%s", ic_err);
    else
        kcfg_errf(err, errlen, "no configuration: set --kubeconfig or KUBECONFIG, or run in "
                               "a cluster");
out:
    free_list(list, n);
    return rc;
}

int kube_config_load_buffer(const char *yaml, size_t len, const char *name,
                            const char *context, kube_config_t **out,
                            char *err, size_t errlen)
{
    kcfg_doc_t *doc = NULL;
    int rc;

    assert(out);
    *out = NULL;
    if (name == NULL || name[0] == '\0')
        name = "<buffer>";
    if (kcfg_doc_parse(yaml ? yaml : "", yaml ? len : 0, name, &doc, err, errlen))
        return -1;
    rc = resolve(&doc, 1, name, context, out, err, errlen);
    kcfg_doc_destroy(&doc);
    return rc;
}

const kube_rest_config_t *kube_config_rest(const kube_config_t *cfg)
{
    assert(cfg);
    return &cfg->rest;
}

/* ---- credentials ---- */

/* Re-read the token file when stat says it changed. Keeps the old token on failure. */
static int refresh_file_token(kube_config_t *c, char *err, size_t errlen)
{
    struct stat st, rst;
    char *tok = NULL, why[128];
    size_t len;

    if (stat(c->token_file, &st) != 0) {
        kcfg_errf(err, errlen, "token file %s: %s", c->token_file, strerror(errno));
        return -1;
    }
    if (c->file_token && !c->file_token_stale && st.st_size == c->file_token_st.st_size &&
        st.st_mtim.tv_sec == c->file_token_st.st_mtim.tv_sec &&
        st.st_mtim.tv_nsec == c->file_token_st.st_mtim.tv_nsec &&
        st.st_ino == c->file_token_st.st_ino && st.st_dev == c->file_token_st.st_dev)
        return 0;
    if (kcfg_read_file(c->token_file, KCFG_MAX_FILE_BYTES, 1, &tok, &len, &rst, why,
                       sizeof why)) {
        kcfg_errf(err, errlen, "token file %s: %s", c->token_file, why);
        return -1;
    }
    if (trim_space(tok, len) == 0 || !token_ok(tok)) {
        kcfg_errf(err, errlen, "token file %s is empty or contains control characters",
                  c->token_file);
        free(tok);
        return -1;
    }
    if (c->file_token == NULL || strcmp(c->file_token, tok) != 0)
        c->cred_gen++;
    free(c->file_token);
    c->file_token = tok;
    c->file_token_st = rst; /* of what was read, so a change after the read is seen */
    c->file_token_stale = 0;
    return 0;
}

/* Run the exec plugin when there is no credential or it expires within the slack. */
static int exec_run(kube_config_t *c, int *changed, char *err, size_t errlen);

static int refresh_exec(kube_config_t *c, char *err, size_t errlen)
{
    int64_t now = g_now_s();
    if (c->exec_cred_valid &&
        (c->exec_cred.expiry_s == 0 || now < c->exec_cred.expiry_s - KCFG_EXPIRY_SLACK_S))
        return 0;
    /* A failing plugin is not re-run on every request: 1 s after the first failure, then
     * doubling up to KCFG_EXEC_BACKOFF_MAX_S; until then the last error stands. */
    if (c->exec_failures > 0 && now < c->exec_retry_at_s) {
        kcfg_errf(err, errlen, "%s (failed %d time%s in a row; next run in %llds)", c->exec_last_err,
                  c->exec_failures, c->exec_failures == 1 ? "" : "s", (long long)(c->exec_retry_at_s - now));
        return -1;
    }
    int changed = 0;
    if (exec_run(c, &changed, err, errlen) == 0) {
        int refused_again = c->exec_rejected && !changed;
        c->exec_rejected = 0;
        if (!refused_again) {
            c->exec_failures = 0;
            return 0;
        }
        /* The plugin handed back the credential the server just refused: keep it (it is
         * all we have) but do not run the plugin again before the backoff says so. */
        kcfg_errf(err, errlen, "exec plugin \"%s\" returned the credential the server "
                               "rejected (401)", c->exec->command);
    }
    if (c->exec_failures < 30)
        c->exec_failures++;
    int64_t delay = INT64_C(1) << (c->exec_failures - 1);
    c->exec_retry_at_s = now + (delay < KCFG_EXEC_BACKOFF_MAX_S ? delay : KCFG_EXEC_BACKOFF_MAX_S);
    snprintf(c->exec_last_err, sizeof(c->exec_last_err), "%s", err && errlen ? err : "exec plugin failed");
    return -1;
}

/* Same string, both NULL counting as same. */
static int same_str(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a && b && strcmp(a, b) == 0);
}

/* Run the exec plugin once and keep its credential; *changed says whether it differs
 * from the previous one (then the generation moves on). Returns 0, or -1 with err set. */
static int exec_run(kube_config_t *c, int *changed, char *err, size_t errlen)
{
    kcfg_exec_cred_t cred;
    char *json = NULL, msg[768];
    size_t len;
    const kcfg_exec_config_t *e = c->exec;
    int rc = -1;

    kcfg_exec_spec_t spec = {
        .display_name = e->command, .path = c->exec_path, .argv = c->exec_argv,
        .env = e->env, .n_env = e->n_env, .exec_info = c->exec_info,
        .install_hint = e->install_hint,
    };
    if (kcfg_exec_run(&spec, &json, &len, err, errlen))
        return -1;
    if (kcfg_exec_parse(json, len, e->api_version, &cred, msg, sizeof msg)) {
        kcfg_errf(err, errlen, "exec plugin \"%s\": %s", e->command, msg);
        goto out;
    }
    if (cred.token && !token_ok(cred.token)) {
        kcfg_errf(err, errlen, "exec plugin \"%s\": token contains control characters",
                  e->command);
        kcfg_exec_cred_clear(&cred);
        goto out;
    }
    if (cred.cert_pem) {
        const char *why = pem_pair_problem(cred.cert_pem, cred.cert_pem_len, cred.key_pem,
                                           cred.key_pem_len);
        if (why) {
            kcfg_errf(err, errlen, "exec plugin \"%s\": %s", e->command, why);
            kcfg_exec_cred_clear(&cred);
            goto out;
        }
    }
    *changed = !same_str(cred.token, c->exec_cred.token) ||
               !same_str(cred.cert_pem, c->exec_cred.cert_pem) ||
               !same_str(cred.key_pem, c->exec_cred.key_pem);
    if (*changed)
        c->cred_gen++;
    kcfg_exec_cred_clear(&c->exec_cred);
    c->exec_cred = cred;
    c->exec_cred_valid = 1;
    rc = 0;
out:
    free(json);
    return rc;
}

int kube_config_credentials(kube_config_t *cfg, const char **token,
                            const char **cert_pem, const char **key_pem,
                            char *err, size_t errlen)
{
    int rc = 0;

    assert(cfg && token && cert_pem && key_pem);
    *token = NULL;
    *cert_pem = cfg->cert_pem;
    *key_pem = cfg->key_pem;
    if (cfg->token_file) {
        /* The file wins over a static token, which is the fallback while it is
         * unreadable (client-go's order). */
        rc = refresh_file_token(cfg, err, errlen);
        *token = cfg->file_token ? cfg->file_token : cfg->static_token;
    } else if (cfg->static_token) {
        *token = cfg->static_token;
    } else if (cfg->exec) {
        rc = refresh_exec(cfg, err, errlen);
        *token = cfg->exec_cred.token;
        if (cfg->exec_cred.cert_pem) {
            *cert_pem = cfg->exec_cred.cert_pem;
            *key_pem = cfg->exec_cred.key_pem;
        }
    }
    return rc;
}

void kube_config_credentials_invalidate(kube_config_t *cfg)
{
    assert(cfg);
    cfg->exec_cred_valid = 0;
    cfg->file_token_stale = 1;
}

uint64_t kube_config_credentials_generation(const kube_config_t *cfg)
{
    assert(cfg);
    return cfg->cred_gen;
}

int kube_config_credentials_rejected(kube_config_t *cfg, uint64_t gen)
{
    assert(cfg);
    if (gen != cfg->cred_gen)
        return 0; /* already replaced: the rest of a burst of 401s */
    if (cfg->exec && cfg->exec_cred_valid)
        cfg->exec_rejected = 1;
    kube_config_credentials_invalidate(cfg);
    return 1;
}
