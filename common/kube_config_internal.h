/* kube_config_internal: pieces of kube_config shared between its source files and its
 * unit tests. Not part of the public interface; nothing outside common/kube_config*.c
 * and tests/unit/test_kube_config.c includes this header.
 *
 *   kube_config_yaml.c  kubeconfig YAML -> kcfg_doc_t (a faithful, unvalidated model)
 *   kube_config_exec.c  run an exec credential plugin, parse its ExecCredential
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
} kcfg_cluster_t;

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
