/* kube_config_internal: pieces of kube_config shared between its source files and its
 * unit tests. Not part of the public interface; nothing outside common/kube_config*.c
 * and tests/unit/test_kube_config.c includes this header.
 *
 *   kube_config_yaml.c  kubeconfig YAML -> kcfg_doc_t (a faithful, unvalidated model)
 *   kube_config_exec.c  run an exec credential plugin, parse its ExecCredential
 *   kube_config_transport.c  what client-go's transport decides: the proxy, the
 *                       impersonation headers (pure functions)
 *   kube_config.c       pick the sources, merge, resolve one context, credentials
 */
#ifndef RDC_KUBE_CONFIG_INTERNAL_H
#define RDC_KUBE_CONFIG_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* Hard caps that bound memory whatever the files say. */
#define KCFG_MAX_FILE_BYTES ((size_t)4 << 20)       /* kubeconfig, CA, cert, key, token */
#define KCFG_MAX_EXEC_STDOUT ((size_t)1 << 20)      /* ExecCredential JSON */
#define KCFG_MAX_EXEC_STDERR ((size_t)64 << 10)     /* kept for the error message */
#define KCFG_DEFAULT_EXEC_TIMEOUT_MS 30000
#define KCFG_EXPIRY_SLACK_S 10                      /* refresh this long before expiry */
#define KCFG_EXEC_BACKOFF_MAX_S 30                  /* longest wait between runs of a failing plugin */

/* ---- the model of one kubeconfig file (strings are owned, NULL when absent) ---- */

typedef struct {
    char *name;
    char *value;
} kcfg_env_var_t;

typedef struct {
    char *api_version;
    char *command;
    char **args;
    size_t n_args;
    kcfg_env_var_t *env;
    size_t n_env;
    char *install_hint;
    int provide_cluster_info;
    char *interactive_mode;
} kcfg_exec_config_t;

typedef struct {
    char *name;
    char *server;
    char *certificate_authority;      /* path as written in the file */
    char *certificate_authority_data; /* base64 as written in the file */
    int insecure_skip_tls_verify;
    char *tls_server_name;
    char *proxy_url;                  /* proxy-url as written in the file */
} kcfg_cluster_t;

/* One as-user-extra entry: a key and its values, in file order. */
typedef struct {
    char *key;
    char **values;
    size_t n_values;
} kcfg_extra_t;

typedef struct {
    char *name;
    char *client_certificate;
    char *client_certificate_data;
    char *client_key;
    char *client_key_data;
    char *token;
    char *token_file;
    int has_auth_provider;            /* auth-provider: present (unsupported) */
    kcfg_exec_config_t *exec;         /* NULL when no exec: section */
    char *as;                         /* impersonation: as */
    char *as_uid;                     /* as-uid */
    char **as_groups;                 /* as-groups */
    size_t n_as_groups;
    kcfg_extra_t *as_extra;           /* as-user-extra */
    size_t n_as_extra;
} kcfg_user_t;

typedef struct {
    char *name;
    char *cluster;
    char *user;
    char *namespace_;
} kcfg_context_t;

typedef struct {
    char *path;                       /* the file name used in messages */
    char *dir;                        /* absolute directory for relative references */
    char *current_context;
    kcfg_cluster_t *clusters;
    size_t n_clusters;
    kcfg_user_t *users;
    size_t n_users;
    kcfg_context_t *contexts;
    size_t n_contexts;
} kcfg_doc_t;

/* Parse one kubeconfig held in buf (len bytes, need not be NUL-terminated). path names
 * the file in messages and decides the directory relative references resolve against.
 * Only the structure is checked here (types, duplicate names); values are checked when a
 * context is resolved. Returns 0 and a new doc in *out (free with kcfg_doc_destroy), or
 * -1 with *out NULL and one line in err naming the file and the field path. */
int kcfg_doc_parse(const char *buf, size_t len, const char *path, kcfg_doc_t **out,
                   char *err, size_t errlen);

/* Free a doc and set *doc_p to NULL. Safe with NULL. */
void kcfg_doc_destroy(kcfg_doc_t **doc_p);

/* Free an exec section (as found in kcfg_user_t.exec). Safe with NULL. */
void kcfg_exec_config_free(kcfg_exec_config_t *e);

/* ---- exec credential plugins ---- */

/* What to run. All pointers are borrowed. */
typedef struct {
    const char *display_name;         /* the command as configured, for messages */
    const char *path;                 /* resolved executable; no '/' = search $PATH */
    char *const *argv;                /* NULL-terminated, argv[0] included */
    const kcfg_env_var_t *env;        /* additions to the environment */
    size_t n_env;
    const char *exec_info;            /* KUBERNETES_EXEC_INFO value */
    const char *install_hint;         /* appended to errors, or NULL */
} kcfg_exec_spec_t;

/* A parsed ExecCredential status. Strings are owned; free with kcfg_exec_cred_clear. */
typedef struct {
    char *token;
    char *cert_pem;
    size_t cert_pem_len;
    char *key_pem;
    size_t key_pem_len;
    int64_t expiry_s;                 /* wall-clock seconds; 0 = does not expire */
} kcfg_exec_cred_t;

/* Run the plugin with stdin from /dev/null, capturing stdout (at most
 * KCFG_MAX_EXEC_STDOUT) and stderr, killing its process group after the timeout.
 * Returns 0 with the NUL-terminated stdout in *out / *outlen (caller frees), or -1 with
 * *out NULL and one line in err naming the plugin (with the first line of its stderr
 * and the install hint when it failed). Blocks for at most the timeout. */
int kcfg_exec_run(const kcfg_exec_spec_t *spec, char **out, size_t *outlen,
                  char *err, size_t errlen);

/* Parse an ExecCredential JSON document whose apiVersion must equal api_version.
 * Returns 0 and fills *cred (previous contents are not freed), or -1 with *cred zeroed
 * and a message in err (without a plugin name prefix). */
int kcfg_exec_parse(const char *json, size_t len, const char *api_version,
                    kcfg_exec_cred_t *cred, char *err, size_t errlen);

/* Free the strings of cred and zero it. */
void kcfg_exec_cred_clear(kcfg_exec_cred_t *cred);

/* Parse an RFC 3339 timestamp ("2024-05-01T12:00:00Z", optional fraction, 'Z' or
 * +hh:mm offset) into whole seconds since the epoch (the fraction is dropped). Returns 0,
 * or -1 when s is not such a timestamp. */
int kcfg_parse_rfc3339(const char *s, int64_t *epoch_s);

/* ---- transport decisions (kube_config_transport.c; pure) ---- */

/* An environment lookup: getenv, or a table in the tests. NULL or "" = unset. */
typedef const char *(*kcfg_getenv_fn)(const char *name);

/* The proxy client-go would use for requests to server (an http:// or https:// URL).
 * proxy_url (the cluster's proxy-url, may be NULL) wins, even for a loopback server; it
 * must be an http, https or socks5 URL with a host. Otherwise Go's
 * http.ProxyFromEnvironment with env: HTTPS_PROXY, else https_proxy, for an https server;
 * HTTP_PROXY, else http_proxy, for http (ignored when REQUEST_METHOD is set, Go's CGI
 * rule); a value without a scheme gets http://; no proxy for "localhost", a loopback
 * address, or a host NO_PROXY (else no_proxy) exempts ("*", IP, CIDR, domain with its
 * subdomains, ".domain", "*.domain", each with an optional :port).
 * Returns 0 with *proxy a new string for curl (socks5:// as socks5h://, which resolves at
 * the proxy as Go does) or NULL for a direct connection, and *source naming where it
 * came from ("proxy-url", "HTTPS_PROXY", ...) or NULL; -1 with err set when proxy_url is
 * unusable (nothing allocated). */
int kcfg_proxy_for(const char *server, const char *proxy_url, kcfg_getenv_fn env,
                   char **proxy, const char **source, char *err, size_t errlen);

/* Whether no_proxy (a NO_PROXY value) exempts host (no brackets for IPv6) at port
 * (decimal, the scheme's default when the URL has none). 1 = go direct. */
int kcfg_no_proxy_match(const char *no_proxy, const char *host, const char *port);

/* The Impersonate-* header lines of user u, as client-go's impersonating round tripper
 * writes them: "Impersonate-User: <as>", "Impersonate-Uid: <as-uid>", one
 * "Impersonate-Group: <g>" per group, one "Impersonate-Extra-<key>: <v>" per value with
 * the key percent-encoded where it is not an HTTP token character (and '%' itself).
 * Nothing when none of as, as-uid, as-groups, as-user-extra is set. where prefixes
 * errors. Returns 0 with *lines (NULL when none; free with kcfg_free_lines) and *n, or
 * -1 with err set when a value contains a control character (it would break the header;
 * Go refuses to send it) or when as-uid, as-groups or as-user-extra comes without as
 * (kubectl refuses that too: "requesting uid, groups or user-extra ... without
 * impersonating a user"). */
int kcfg_impersonation_headers(const kcfg_user_t *u, const char *where, char ***lines,
                               size_t *n, char *err, size_t errlen);

/* Free n strings and the array. NULL-safe. */
void kcfg_free_lines(char **lines, size_t n);

/* ---- helpers shared by the files ---- */

/* printf into err (if err and errlen), then replace control characters so the message
 * stays one line whatever the input files contained. */
void kcfg_errf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Read a whole file of at most cap bytes. regular_only refuses anything but a regular
 * file (and never blocks on a FIFO). Returns 0 with a NUL-terminated copy in *out
 * (caller frees), its length in *len and its fstat in *st (if st); or -1 with *out NULL,
 * errno set (ENOENT, EFBIG, ...) and a short reason ("No such file or directory",
 * "larger than 4194304 bytes") in why. */
int kcfg_read_file(const char *path, size_t cap, int regular_only, char **out,
                   size_t *len, struct stat *st, char *why, size_t whylen);

/* ---- test hooks (tests only; not thread-safe) ---- */

/* Replace the wall clock used for credential expiry; NULL restores the real clock. */
void kcfg_test_set_clock(int64_t (*now_wall_s)(void));

/* Set the exec plugin timeout in milliseconds; 0 restores the default (30 s). */
void kcfg_test_set_exec_timeout_ms(int ms);

#endif
