/* kube_config: where the API server is and how to authenticate to it.
 *
 * Sources, in controller-runtime's order: an explicit path (--kubeconfig), then
 * $KUBECONFIG (a colon-separated list merged as kubectl merges it: the first file to set
 * a value wins), then in-cluster configuration (KUBERNETES_SERVICE_HOST/_PORT and the
 * service-account files), then ~/.kube/config.
 *
 * The loaded configuration is immutable except for credentials that rotate: bearer
 * tokens read from a file are re-read when the file changes, and exec credential plugins
 * are re-run when their credential expires or the server rejected it (401). Ask for the
 * current token on every request with kube_config_credentials().
 *
 * Which credential is used, as client-go decides (rest.Config + transport):
 *   - client-certificate/-key and token/tokenFile are independent: both are sent when
 *     both are set (the API server tries the certificate first);
 *   - tokenFile wins over token (token is the fallback while the file is unreadable);
 *   - an exec plugin is never run when a token, tokenFile or client certificate is set
 *     (client-go's exec authenticator steps aside: kubectl does not run it either);
 *   - a context without a user, or naming a user that no file defines, is an error at
 *     load naming the context (kubectl 1.37 has no credential then and prompts for a
 *     username, which fails without a terminal: "error: EOF");
 *   - as-uid, as-groups or as-user-extra without as is an error at load, as in kubectl.
 * Impersonation (as, as-uid, as-groups, as-user-extra) becomes Impersonate-* headers on
 * every request (kube_rest_config_t.impersonate_headers). The proxy: the cluster's
 * proxy-url wins; otherwise Go's http.ProxyFromEnvironment (HTTPS_PROXY / https_proxy
 * for an https server, HTTP_PROXY / http_proxy for http, NO_PROXY / no_proxy, and never a
 * proxy for localhost or a loopback address), read once at load.
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
    int has_bearer;              /* 1 when a token, tokenFile or exec plugin is used */
    const char *auth_source;     /* what identifies us: "client-certificate",
                                    "client-certificate+token", "token", "tokenFile",
                                    "client-certificate+tokenFile", "exec", "in-cluster" */
    const char *proxy;           /* proxy URL for curl (socks5 as socks5h), NULL = direct */
    const char *proxy_source;    /* "proxy-url", "HTTPS_PROXY", "https_proxy",
                                    "HTTP_PROXY", "http_proxy", or NULL when direct */
    const char *impersonate_user; /* as, or NULL */
    const char *const *impersonate_headers; /* "Impersonate-User: x" ... lines */
    size_t n_impersonate_headers;
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
 * re-read when its mtime/size changes or after kube_config_credentials_rejected; an exec
 * plugin is re-run when its credential is missing, was rejected, or expires within
 * 10 s, but not sooner than 1 s after a failed run, doubling with each failure in a
 * row up to 30 s (meanwhile the last error is returned at once). If an exec plugin
 * returns a client certificate and key, *cert_pem / *key_pem point at them (else at the
 * static ones, or NULL). Returns 0, or -1 with a message in err (the previous credential, if any, is kept and returned:
 * a failed refresh is not fatal while the old token still works). */
int kube_config_credentials(kube_config_t *cfg, const char **token,
                            const char **cert_pem, const char **key_pem,
                            char *err, size_t errlen);

/* Forget the cached credential so the next kube_config_credentials re-runs the exec
 * plugin and re-reads the token file even if unchanged. The old token is still returned
 * if the refresh fails. Prefer kube_config_credentials_rejected after a 401. */
void kube_config_credentials_invalidate(kube_config_t *cfg);

/* A number that changes whenever the credential kube_config_credentials hands out
 * changes (a new exec credential, a token file with new contents). Read it right after
 * kube_config_credentials and keep it with the request. */
uint64_t kube_config_credentials_generation(const kube_config_t *cfg);

/* The server answered 401 to a request made with the credential of generation gen.
 * When that credential is still the current one, forget it (as
 * kube_config_credentials_invalidate) so that the next kube_config_credentials re-runs
 * the exec plugin or re-reads the token file, and return 1. When it has already been
 * replaced (another request of the same burst of 401s got there first), do nothing and
 * return 0: a burst of 401s runs the plugin once, as client-go's exec authenticator.
 * A plugin that hands back the very credential that was rejected counts as a failed run
 * for the backoff of kube_config_credentials (1 s doubling to 30 s), so a server that
 * keeps refusing it does not run the plugin on every request. */
int kube_config_credentials_rejected(kube_config_t *cfg, uint64_t gen);

#endif
