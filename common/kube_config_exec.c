/* kube_config_exec: run a client-go exec credential plugin and read its ExecCredential.
 *
 * The plugin is started with posix_spawn (glibc reports a failed exec through its own
 * close-on-exec pipe, so "not found" and "permission denied" come back as errno) in a
 * process group of its own, with stdin from /dev/null, an empty signal mask and default
 * SIGPIPE. Its stdout and stderr are drained together with poll() against one monotonic
 * deadline; on timeout or oversized output the whole group is killed and reaped.
 *
 * The child is reaped with waitpid() on its pid: a process that reaps every child itself
 * (waitpid(-1) on SIGCHLD) must not do so while a plugin runs.
 */
#include "kube_config_internal.h"

#include "clock.h"
#include "jsonx.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static int g_timeout_ms = KCFG_DEFAULT_EXEC_TIMEOUT_MS;

void kcfg_test_set_exec_timeout_ms(int ms)
{
    g_timeout_ms = ms > 0 ? ms : KCFG_DEFAULT_EXEC_TIMEOUT_MS;
}

static int64_t mono_ms(void)
{
    return clock_mono_ns() / NS_PER_MS;
}

/* A growable output buffer with a cap; bytes past the cap are dropped and set overflow. */
typedef struct {
    char *data;
    size_t len, alloc, cap;
    int overflow;
} capbuf_t;

static int capbuf_add(capbuf_t *b, const char *p, size_t n)
{
    if (b->len + n > b->cap) {
        b->overflow = 1;
        n = b->cap - b->len;
    }
    if (n == 0)
        return 0;
    if (b->len + n + 1 > b->alloc) {
        size_t want = b->alloc ? b->alloc : 4096;
        while (want < b->len + n + 1)
            want *= 2;
        char *d = realloc(b->data, want);
        if (d == NULL)
            return -1;
        b->data = d;
        b->alloc = want;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

/* Locate name in $PATH the way execvp would (first executable regular file). Returns a
 * new string or NULL. */
static char *path_lookup(const char *name)
{
    const char *path = getenv("PATH");
    if (path == NULL || path[0] == '\0')
        path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path;; ) {
        const char *colon = strchr(p, ':');
        size_t dlen = colon ? (size_t)(colon - p) : strlen(p);
        char cand[PATH_MAX];
        int n = dlen ? snprintf(cand, sizeof cand, "%.*s/%s", (int)dlen, p, name)
                     : snprintf(cand, sizeof cand, "./%s", name);
        struct stat st;
        if (n > 0 && (size_t)n < sizeof cand && stat(cand, &st) == 0 && S_ISREG(st.st_mode) &&
            access(cand, X_OK) == 0)
            return strdup(cand);
        if (colon == NULL)
            return NULL;
        p = colon + 1;
    }
}

/* environ with the plugin's additions and KUBERNETES_EXEC_INFO replacing any variables of
 * the same names. The returned array and the strings it allocated are in *owned. */
static char **build_envp(const kcfg_exec_spec_t *spec, char ***owned, size_t *n_owned)
{
    size_t n_env = 0, k = 0, o = 0;
    char **envp = NULL, **own = NULL;

    while (environ && environ[n_env])
        n_env++;
    envp = calloc(n_env + spec->n_env + 2, sizeof *envp);
    own = calloc(spec->n_env + 1, sizeof *own);
    if (envp == NULL || own == NULL)
        goto fail;
    for (size_t i = 0; i < spec->n_env + 1; i++) {
        const char *name = i < spec->n_env ? spec->env[i].name : "KUBERNETES_EXEC_INFO";
        const char *value = i < spec->n_env ? spec->env[i].value : spec->exec_info;
        size_t len = strlen(name) + 1 + (value ? strlen(value) : 0) + 1;
        if ((own[o] = malloc(len)) == NULL)
            goto fail;
        snprintf(own[o++], len, "%s=%s", name, value ? value : "");
    }
    for (size_t i = 0; i < n_env; i++) {
        const char *eq = strchr(environ[i], '=');
        size_t nlen = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
        int replaced = 0;
        for (size_t j = 0; j < o && !replaced; j++)
            replaced = strncmp(own[j], environ[i], nlen) == 0 && own[j][nlen] == '=';
        if (!replaced)
            envp[k++] = environ[i];
    }
    /* Later additions win over earlier ones of the same name (as for a Go env list). */
    for (size_t j = 0; j < o; j++) {
        size_t nlen = (size_t)(strchr(own[j], '=') - own[j]);
        int later = 0;
        for (size_t m = j + 1; m < o && !later; m++)
            later = strncmp(own[m], own[j], nlen + 1) == 0;
        if (!later)
            envp[k++] = own[j];
    }
    envp[k] = NULL;
    *owned = own;
    *n_owned = o;
    return envp;
fail:
    for (size_t j = 0; j < o; j++)
        free(own[j]);
    free(own);
    free(envp);
    return NULL;
}

/* First non-empty line of text, trimmed, at most 200 characters, into buf. */
static const char *first_line(const char *text, size_t len, char *buf, size_t buflen)
{
    buf[0] = '\0';
    if (text == NULL)
        return buf;
    size_t i = 0;
    while (i < len) {
        while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' ||
                           text[i] == '\n'))
            i++;
        size_t start = i;
        while (i < len && text[i] != '\n')
            i++;
        size_t end = i;
        while (end > start && (text[end - 1] == ' ' || text[end - 1] == '\r' ||
                               text[end - 1] == '\t'))
            end--;
        if (end > start) {
            size_t n = end - start > 200 ? 200 : end - start;
            snprintf(buf, buflen, "%.*s", (int)n, text + start);
            return buf;
        }
    }
    return buf;
}

static void kill_and_reap(pid_t pid)
{
    int status;
    kill(-pid, SIGKILL); /* the group: a shell script's children too */
    kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
}

/* Spawn the executable at path (a path, not a name to search); returns the pid or -1
 * with errno. out_w/err_w become its stdout and stderr. */
static pid_t spawn_plugin(const char *path, char *const argv[], char *const envp[],
                          int out_w, int err_w)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t none, dfl;
    pid_t pid = -1;
    int e;

    if ((e = posix_spawn_file_actions_init(&fa)) != 0) {
        errno = e;
        return -1;
    }
    if ((e = posix_spawnattr_init(&attr)) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        errno = e;
        return -1;
    }
    sigemptyset(&none);
    sigemptyset(&dfl);
    sigaddset(&dfl, SIGPIPE);
    sigaddset(&dfl, SIGINT);
    sigaddset(&dfl, SIGTERM);
    sigaddset(&dfl, SIGCHLD);
    if ((e = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0)) ||
        (e = posix_spawn_file_actions_adddup2(&fa, out_w, 1)) ||
        (e = posix_spawn_file_actions_adddup2(&fa, err_w, 2)) ||
        (e = posix_spawnattr_setpgroup(&attr, 0)) ||
        (e = posix_spawnattr_setsigmask(&attr, &none)) ||
        (e = posix_spawnattr_setsigdefault(&attr, &dfl)) ||
        (e = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                                 POSIX_SPAWN_SETSIGDEF)))
        goto out;
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    /* Descriptors the rest of the process forgot to mark close-on-exec stay ours. */
    if ((e = posix_spawn_file_actions_addclosefrom_np(&fa, 3)))
        goto out;
#endif
    e = posix_spawn(&pid, path, &fa, &attr, argv, envp);
out:
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    if (e) {
        errno = e;
        return -1;
    }
    return pid;
}

enum { DRAIN_OK, DRAIN_TIMEOUT, DRAIN_OVERFLOW, DRAIN_ERROR };

/* Drain both pipes until EOF, the stdout cap or the deadline. Returns DRAIN_OK, or why
 * it stopped (DRAIN_ERROR leaves errno set). */
static int drain(int out_r, int err_r, capbuf_t *out, capbuf_t *errb, int64_t deadline)
{
    struct pollfd fds[2] = {{.fd = out_r, .events = POLLIN}, {.fd = err_r, .events = POLLIN}};
    char chunk[16384];

    while (fds[0].fd >= 0 || fds[1].fd >= 0) {
        int64_t left = deadline - mono_ms();
        if (left <= 0)
            return DRAIN_TIMEOUT;
        int n = poll(fds, 2, left > INT_MAX ? INT_MAX : (int)left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return DRAIN_ERROR;
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || fds[i].revents == 0)
                continue;
            ssize_t r = read(fds[i].fd, chunk, sizeof chunk);
            if (r < 0 && (errno == EINTR || errno == EAGAIN))
                continue;
            if (r <= 0) {
                fds[i].fd = -1; /* EOF (or error): stop polling it */
                continue;
            }
            if (capbuf_add(i == 0 ? out : errb, chunk, (size_t)r)) {
                errno = ENOMEM;
                return DRAIN_ERROR;
            }
            if (out->overflow)
                return DRAIN_OVERFLOW;
        }
    }
    return DRAIN_OK;
}

/* Wait for pid to exit, until the deadline. Returns 0 with *status, or 1 on timeout. */
static int reap_by(pid_t pid, int *status, int64_t deadline)
{
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            return 0;
        if (r < 0 && errno != EINTR) {
            *status = 0; /* reaped by someone else (SIGCHLD ignored): assume success */
            return 0;
        }
        int64_t left = deadline - mono_ms();
        if (left <= 0)
            return 1;
        poll(NULL, 0, left < 5 ? (int)left : 5); /* it closed its pipes; exit is near */
    }
}

/* The executable to run for spec: spec->path when it names a file (which must be
 * executable), else what $PATH gives for the name, in *resolved (the caller frees it).
 * NULL with err set when there is none. */
static const char *plugin_path(const kcfg_exec_spec_t *spec, const char *hint, char **resolved,
                               char *err, size_t errlen)
{
    const char *name = spec->display_name, *path = spec->path;
    if (strchr(path, '/') == NULL) {
        if ((*resolved = path_lookup(path)) == NULL)
            kcfg_errf(err, errlen, "exec plugin \"%s\": executable not found in $PATH%s", name,
                      hint);
        return *resolved;
    }
    if (access(path, X_OK) != 0) {
        /* Checked here too because not every posix_spawn reports a failed exec as an
         * error (under valgrind it comes back as exit status 127). */
        kcfg_errf(err, errlen, "exec plugin \"%s\": cannot run %s: %s%s", name, path,
                  strerror(errno), hint);
        return NULL;
    }
    return path;
}

/* Read the running plugin pid's stdout into ob and stderr into eb until both end, then
 * reap it, all by deadline. Returns 0 with its wait status in *status, or -1 with err
 * saying why (output too large, timed out, a read failed) after killing it. Either way
 * pid is reaped. */
static int collect(pid_t pid, int out_r, int err_r, capbuf_t *ob, capbuf_t *eb, int64_t deadline,
                   const char *name, const char *hint, int *status, char *err, size_t errlen)
{
    int why = drain(out_r, err_r, ob, eb, deadline);
    if (why == DRAIN_OK && reap_by(pid, status, deadline))
        why = DRAIN_TIMEOUT;
    if (why == DRAIN_OK)
        return 0;
    int saved = errno;
    kill_and_reap(pid);
    if (why == DRAIN_OVERFLOW)
        kcfg_errf(err, errlen, "exec plugin \"%s\": output larger than %zu bytes", name,
                  KCFG_MAX_EXEC_STDOUT);
    else if (why == DRAIN_TIMEOUT)
        kcfg_errf(err, errlen, "exec plugin \"%s\": timed out after %d ms, killed%s",
                  name, g_timeout_ms, hint);
    else
        kcfg_errf(err, errlen, "exec plugin \"%s\": reading its output: %s", name,
                  strerror(saved));
    return -1;
}

/* 0 when the wait status is a clean exit; else -1 with err saying how the plugin ended
 * and the first line of its stderr (eb). */
static int exit_problem(int status, const capbuf_t *eb, const char *name, const char *hint,
                        char *err, size_t errlen)
{
    if (!WIFSIGNALED(status) && !(WIFEXITED(status) && WEXITSTATUS(status) != 0))
        return 0;
    char line[256], what[64];
    first_line(eb->data, eb->len, line, sizeof line);
    if (WIFSIGNALED(status))
        snprintf(what, sizeof what, "killed by signal %d", WTERMSIG(status));
    else
        snprintf(what, sizeof what, "exit status %d", WEXITSTATUS(status));
    kcfg_errf(err, errlen, "exec plugin \"%s\": %s%s%s%s", name, what, line[0] ? ": " : "",
              line, hint);
    return -1;
}

int kcfg_exec_run(const kcfg_exec_spec_t *spec, char **out, size_t *outlen,
                  char *err, size_t errlen)
{
    int out_p[2] = {-1, -1}, err_p[2] = {-1, -1};
    capbuf_t ob = {.cap = KCFG_MAX_EXEC_STDOUT}, eb = {.cap = KCFG_MAX_EXEC_STDERR};
    char **envp = NULL, **owned = NULL, *resolved = NULL;
    size_t n_owned = 0;
    char hint[600] = "";
    pid_t pid = -1;
    int rc = -1, status = 0;
    const char *name = spec->display_name;

    *out = NULL;
    *outlen = 0;
    if (spec->install_hint && spec->install_hint[0])
        snprintf(hint, sizeof hint, "; install hint: %s", spec->install_hint);
    const char *path = plugin_path(spec, hint, &resolved, err, errlen);
    if (!path)
        goto out;
    if ((envp = build_envp(spec, &owned, &n_owned)) == NULL) {
        kcfg_errf(err, errlen, "exec plugin \"%s\": out of memory", name);
        goto out;
    }
    if (pipe2(out_p, O_CLOEXEC) || pipe2(err_p, O_CLOEXEC)) {
        kcfg_errf(err, errlen, "exec plugin \"%s\": pipe: %s", name, strerror(errno));
        goto out;
    }
    int64_t deadline = mono_ms() + g_timeout_ms;
    if ((pid = spawn_plugin(path, spec->argv, envp, out_p[1], err_p[1])) < 0) {
        kcfg_errf(err, errlen, "exec plugin \"%s\": cannot run %s: %s%s", name, path,
                  strerror(errno), hint);
        goto out;
    }
    close(out_p[1]);
    close(err_p[1]);
    out_p[1] = err_p[1] = -1;
    int collected = collect(pid, out_p[0], err_p[0], &ob, &eb, deadline, name, hint, &status, err,
                            errlen);
    pid = -1; /* reaped */
    if (collected || exit_problem(status, &eb, name, hint, err, errlen))
        goto out;
    if (ob.len == 0) {
        kcfg_errf(err, errlen, "exec plugin \"%s\": printed nothing on stdout%s", name, hint);
        goto out;
    }
    *out = ob.data;
    *outlen = ob.len;
    ob.data = NULL;
    rc = 0;
out:
    if (pid > 0)
        kill_and_reap(pid);
    for (int i = 0; i < 2; i++) {
        if (out_p[i] >= 0)
            close(out_p[i]);
        if (err_p[i] >= 0)
            close(err_p[i]);
    }
    for (size_t i = 0; i < n_owned; i++)
        free(owned[i]);
    free(owned);
    free(envp);
    free(resolved);
    free(ob.data);
    free(eb.data);
    return rc;
}

/* ---- ExecCredential ---- */

void kcfg_exec_cred_clear(kcfg_exec_cred_t *cred)
{
    free(cred->token);
    free(cred->cert_pem);
    free(cred->key_pem);
    memset(cred, 0, sizeof *cred);
}

/* The string at key in obj: 0 with a copy (or NULL when absent/null), -1 when it is not
 * a string or contains NUL. */
static int json_string_at(struct json_object *obj, const char *key, char **out, size_t *len)
{
    struct json_object *v;
    *out = NULL;
    if (len)
        *len = 0;
    if (!json_object_object_get_ex(obj, key, &v) || v == NULL)
        return 0;
    if (!json_object_is_type(v, json_type_string))
        return -1;
    int n = json_object_get_string_len(v);
    const char *s = json_object_get_string(v);
    if (n < 0 || memchr(s, '\0', (size_t)n))
        return -1;
    if (n == 0)
        return 0;
    if ((*out = strndup(s, (size_t)n)) == NULL)
        return -1;
    if (len)
        *len = (size_t)n;
    return 0;
}

/* The whole of json[0..len) as one JSON object, into *root (the caller puts it). Returns
 * 0, or -1 with err saying why not. */
#define EXEC_JSON_DEPTH 32 /* an ExecCredential is three levels deep */

static int parse_object(const char *json, size_t len, struct json_object **root, char *err,
                        size_t errlen)
{
    char why[256];
    jsonx_parse_t rc = jsonx_parse_ex(NULL, json, len, EXEC_JSON_DEPTH, root, NULL, why, sizeof(why));
    if (rc == JSONX_NO_MEMORY) {
        kcfg_errf(err, errlen, "out of memory");
        return -1;
    }
    if (rc == JSONX_TRAILING) {
        kcfg_errf(err, errlen, "invalid ExecCredential JSON: text after the object");
        return -1;
    }
    if (rc) {
        kcfg_errf(err, errlen, "invalid ExecCredential JSON: %s", why);
        return -1;
    }
    if (!*root || !json_object_is_type(*root, json_type_object)) {
        json_object_put(*root);
        *root = NULL;
        kcfg_errf(err, errlen, "invalid ExecCredential: not a JSON object");
        return -1;
    }
    return 0;
}

/* 0 when root says apiVersion api_version and kind ExecCredential, else -1 with err. */
static int check_type(struct json_object *root, const char *api_version, char *err, size_t errlen)
{
    char *got_version = NULL, *kind = NULL;
    int rc = -1;
    if (json_string_at(root, "apiVersion", &got_version, NULL) ||
        json_string_at(root, "kind", &kind, NULL))
        kcfg_errf(err, errlen, "invalid ExecCredential: apiVersion and kind must be strings");
    else if (got_version == NULL || strcmp(got_version, api_version) != 0)
        kcfg_errf(err, errlen, "ExecCredential has apiVersion \"%s\", want \"%s\"",
                  got_version ? got_version : "", api_version);
    else if (kind == NULL || strcmp(kind, "ExecCredential") != 0)
        kcfg_errf(err, errlen, "returned kind \"%s\", want \"ExecCredential\"",
                  kind ? kind : "");
    else
        rc = 0;
    free(got_version);
    free(kind);
    return rc;
}

/* The credential in an ExecCredential's status, into cred. Returns 0, or -1 with err
 * (cred then holds what to clear). */
static int read_status(struct json_object *status, kcfg_exec_cred_t *cred, char *err, size_t errlen)
{
    char *expiry = NULL;
    int rc = -1;
    if (json_string_at(status, "token", &cred->token, NULL) ||
        json_string_at(status, "clientCertificateData", &cred->cert_pem,
                       &cred->cert_pem_len) ||
        json_string_at(status, "clientKeyData", &cred->key_pem, &cred->key_pem_len) ||
        json_string_at(status, "expirationTimestamp", &expiry, NULL))
        kcfg_errf(err, errlen, "ExecCredential status: token, clientCertificateData, "
                               "clientKeyData and expirationTimestamp must be strings");
    else if ((cred->cert_pem == NULL) != (cred->key_pem == NULL))
        kcfg_errf(err, errlen, "ExecCredential status: clientCertificateData and "
                               "clientKeyData must be given together");
    else if (cred->token == NULL && cred->cert_pem == NULL)
        kcfg_errf(err, errlen, "ExecCredential status: neither token nor "
                               "clientCertificateData/clientKeyData");
    else if (expiry && kcfg_parse_rfc3339(expiry, &cred->expiry_s))
        kcfg_errf(err, errlen, "ExecCredential status.expirationTimestamp \"%.64s\": "
                               "not an RFC 3339 time", expiry);
    else
        rc = 0;
    free(expiry);
    return rc;
}

int kcfg_exec_parse(const char *json, size_t len, const char *api_version,
                    kcfg_exec_cred_t *cred, char *err, size_t errlen)
{
    struct json_object *root = NULL, *status = NULL;
    int rc = -1;

    memset(cred, 0, sizeof *cred);
    if (parse_object(json, len, &root, err, errlen) || check_type(root, api_version, err, errlen))
        goto out;
    if (!json_object_object_get_ex(root, "status", &status) ||
        !json_object_is_type(status, json_type_object)) {
        kcfg_errf(err, errlen, "ExecCredential has no status object");
        goto out;
    }
    rc = read_status(status, cred, err, errlen);
out:
    if (rc)
        kcfg_exec_cred_clear(cred);
    json_object_put(root);
    return rc;
}

/* ---- RFC 3339 ---- */

int kcfg_parse_rfc3339(const char *s, int64_t *epoch_s)
{
    int64_t ns;
    if (clock_parse_rfc3339(s, &ns))
        return -1;
    /* Whole seconds, rounded down also before 1970. */
    *epoch_s = ns / NS_PER_SEC - (ns % NS_PER_SEC < 0);
    return 0;
}
