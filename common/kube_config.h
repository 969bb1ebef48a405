/* kube_config: where the API server is and how to authenticate to it.
 *
 * Sources, in controller-runtime's order: an explicit path (--kubeconfig), then
 * $KUBECONFIG (a colon-separated list merged as kubectl merges it: the first file to set
 * a value wins), then in-cluster configuration (KUBERNETES_SERVICE_HOST/_PORT and the
 * service-account files), then ~/.kube/config.
 *
 * The loaded configuration is immutable except for credentials that rotate: bearer
 * tokens read from a file are re-read when the file changes, and exec credential plugins
 * are re-run when their credential expires. Ask for the current token on every request
 * with kube_config_credentials().
 *
 * A kube_config_t is not thread-safe: use it from one thread (the REST client's loop).
 * kube_config_credentials may block while an exec plugin runs (at most 30 s).
 */
#ifndef RDC_KUBE_CONFIG_H
#define RDC_KUBE_CONFIG_H

#include <stddef.h>
#include <stdint.h>

typedef struct kube_config kube_config_t;

/* Where to look. Every field may be NULL (= default). */
typedef struct {
    const char *kubeconfig_path; /* --kubeconfig; takes precedence over everything */
    const char *context;         /* --context; overrides current-context */
    const char *env_kubeconfig;  /* value of $KUBECONFIG; NULL = read the environment,
                                    "" = unset */
    const char *home;            /* home directory; NULL = $HOME */
    const char *root;            /* prefix for in-cluster paths (tests use a fake root) */
    int no_in_cluster;           /* 1: never use in-cluster configuration */
} kube_config_opts_t;

/* Static, resolved connection settings. All strings are NUL-terminated and owned by the
 * kube_config_t; PEM blobs are NULL when absent. */
typedef struct {
    const char *server;          /* https://host:port, no trailing slash */
    const char *context;         /* name of the context used ("" in-cluster) */
    const char *cluster;         /* name of the cluster entry ("" in-cluster) */
    const char *user;            /* name of the user entry ("" in-cluster) */
    const char *source;          /* file(s) the settings came from, or "in-cluster" */
    const char *namespace_;      /* context namespace, or the pod's namespace in-cluster;
                                    "default" when unset */
    const char *ca_pem;          /* certificate-authority(-data) contents */
    size_t ca_pem_len;
    int insecure_skip_tls_verify;
    const char *tls_server_name; /* SNI / verification name override, or NULL */
    const char *client_cert_pem; /* client-certificate(-data) contents */
    size_t client_cert_pem_len;
    const char *client_key_pem;  /* client-key(-data) contents */
    size_t client_key_pem_len;
    int has_bearer;              /* 1 when a token, tokenFile or exec plugin is configured */
} kube_rest_config_t;

/* Load configuration (opts NULL = all defaults). On success returns 0 and stores a new
 * kube_config_t in *out (the caller owns it; free with kube_config_destroy). On error
 * returns -1, leaves *out NULL and writes one line naming the file, the context and the
 * field into err. */
int kube_config_load(const kube_config_opts_t *opts, kube_config_t **out,
                     char *err, size_t errlen);

/* Load from a YAML document held in memory (used by tests and the fuzzer). name is used
 * in error messages as the file name. Same contract as kube_config_load. */
int kube_config_load_buffer(const char *yaml, size_t len, const char *name,
                            const char *context, kube_config_t **out,
                            char *err, size_t errlen);

/* Free the configuration and set *self_p to NULL. Safe with NULL or *self_p NULL. */
void kube_config_destroy(kube_config_t **self_p);

/* The resolved connection settings; valid as long as cfg lives. */
const kube_rest_config_t *kube_config_rest(const kube_config_t *cfg);

/* Current credentials for a request. *token is the bearer token or NULL when none is
 * configured; the pointer stays valid until the next call on cfg. A token file is
 * re-read when its mtime/size changes; an exec plugin is re-run when its credential is
 * missing or expires within 10 s, but not sooner than 1 s after a failed run, doubling
 * with each failure in a row up to 30 s (meanwhile the last error is returned at once). If an exec plugin returns a client certificate and
 * key, *cert_pem / *key_pem point at them (else at the static ones, or NULL). Returns 0,
 * or -1 with a message in err (the previous credential, if any, is kept and returned:
 * a failed refresh is not fatal while the old token still works). */
int kube_config_credentials(kube_config_t *cfg, const char **token,
                            const char **cert_pem, const char **key_pem,
                            char *err, size_t errlen);

/* Forget the cached credential so the next kube_config_credentials re-runs the exec
 * plugin and re-reads the token file even if unchanged (call it after a 401: the server
 * no longer accepts the token). The old token is still returned if the refresh fails. */
void kube_config_credentials_invalidate(kube_config_t *cfg);

#endif
