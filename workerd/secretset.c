/* secretset: the Secrets of spec.tls and spec.acl, and what a reconcile makes of them.
 * See secretset.h. */
#include "secretset.h"

#include "b64.h"
#include "buf.h"
#include "jsonx.h"
#include "render.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOKENS (1 + RDC_SPEC_ACL_USERS_MAX) /* the default user's and each user's */

typedef struct {
    char name[254];
    int answered;
    json_object *obj;  /* a reference of the answer; NULL: absent or failed */
    char error[512];   /* the read failed: why */
} read_t;

struct secretset {
    const rdc_spec_t *spec;
    char ns[254], name[254], uid[128], domain[600];
    read_t reads[SECRETSET_MAX];
    size_t n_reads;
    plan_tls_t tls;
    plan_acl_t acl;
    redis_tls_t *client;
    char refused[600];
    char *hash[TOKENS]; /* SHA-256 hex of each password, wiped */
    char token[TOKENS][96];
    redisexec_secret_t sec[TOKENS];
    size_t n_sec;
};

static void wipe_str(char **s)
{
    if (*s) {
        explicit_bzero(*s, strlen(*s));
        free(*s);
        *s = NULL;
    }
}

/* Ask for Secret name (once). */
static void want(secretset_t *s, const char *name)
{
    for (size_t i = 0; i < s->n_reads; i++)
        if (!strcmp(s->reads[i].name, name))
            return;
    if (s->n_reads < SECRETSET_MAX && strlen(name) < sizeof(s->reads[0].name))
        snprintf(s->reads[s->n_reads++].name, sizeof(s->reads[0].name), "%s", name);
}

static const read_t *answer(const secretset_t *s, const char *name)
{
    for (size_t i = 0; name && i < s->n_reads; i++)
        if (!strcmp(s->reads[i].name, name))
            return &s->reads[i];
    return NULL;
}

secretset_t *secretset_new(const rdc_spec_t *spec, const char *ns, const char *name, const char *uid)
{
    secretset_t *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->spec = spec;
    snprintf(s->ns, sizeof(s->ns), "%s", ns);
    snprintf(s->name, sizeof(s->name), "%s", name);
    snprintf(s->uid, sizeof(s->uid), "%s", uid ? uid : "");
    snprintf(s->domain, sizeof(s->domain), "%s.%s.svc", name, ns);
    if (spec->tls.secret)
        want(s, spec->tls.secret);
    if (spec->acl.n_users) {
        char acl[300];
        snprintf(acl, sizeof(acl), "%s" RENDER_ACL_SUFFIX, name);
        want(s, acl);
    }
    for (size_t i = 0; i < spec->acl.n_users; i++)
        want(s, spec->acl.users[i].secret);
    return s;
}

void secretset_destroy(secretset_t **s_p)
{
    if (!s_p || !*s_p)
        return;
    secretset_t *s = *s_p;
    for (size_t i = 0; i < s->n_reads; i++)
        json_object_put(s->reads[i].obj);
    for (size_t i = 0; i < TOKENS; i++)
        wipe_str(&s->hash[i]);
    redis_tls_destroy(&s->client);
    explicit_bzero(s, sizeof(*s));
    free(s);
    *s_p = NULL;
}

const char *secretset_name(const secretset_t *s, size_t i)
{
    return i < s->n_reads ? s->reads[i].name : NULL;
}

void secretset_take(secretset_t *s, const char *name, const json_object *obj, const kube_error_t *err)
{
    read_t *r = (read_t *)answer(s, name);
    if (!r)
        return;
    r->answered = 1;
    json_object_put(r->obj);
    r->obj = NULL;
    r->error[0] = '\0';
    if (err && err->code != KERR_OK && !kube_error_is_not_found(err))
        kube_error_str(err, r->error, sizeof(r->error));
    else
        r->obj = json_object_get((json_object *)obj);
}

/* The data key of secret decoded (a new string), or NULL. */
static char *data_of(const json_object *secret, const char *key)
{
    const char *b64 = JSONX_STR_AT(secret, "data", key);
    return b64 ? b64_text(b64) : NULL;
}

static size_t len_of(const char *s)
{
    return s ? strlen(s) : 0;
}

/* The pods' names the certificate must serve into names (n of them, pointing into *all,
 * which the caller frees); 0, or -1 when out of memory. */
static int pod_names(const secretset_t *s, const char **names, size_t *n, char **all)
{
    size_t cap = 320;
    *n = 0;
    if (!(*all = calloc(RDC_SPEC_CLUSTER_SIZE_MAX, cap)))
        return -1;
    for (int i = 0; i < s->spec->size && i < RDC_SPEC_CLUSTER_SIZE_MAX; i++) {
        char pod[300], *at = *all + (size_t)i * cap;
        if (render_pod_name(s->spec, s->name, i, pod, sizeof(pod)) ||
            (size_t)snprintf(at, cap, "%s.%s", pod, s->domain) >= cap)
            continue;
        names[(*n)++] = at;
    }
    return 0;
}

/* spec.tls: the checks and the client settings. Returns 0, or -1 when out of memory. */
static int finish_tls(secretset_t *s, int64_t now_s)
{
    const char *sname = s->spec->tls.secret;
    const read_t *r = answer(s, sname);
    s->tls.read = r && r->answered;
    snprintf(s->refused, sizeof(s->refused), "spec.tls: Secret %s/%s was not read", s->ns, sname);
    if (!s->tls.read)
        return 0;
    if (r->error[0]) {
        snprintf(s->tls.error, sizeof(s->tls.error), "%.250s", r->error);
        snprintf(s->refused, sizeof(s->refused), "spec.tls: cannot read Secret %s/%s: %.300s", s->ns, sname, r->error);
        return 0;
    }
    s->tls.found = r->obj != NULL;
    if (!s->tls.found) {
        snprintf(s->refused, sizeof(s->refused), "spec.tls: Secret %s/%s not found", s->ns, sname);
        return 0;
    }
    char *crt = data_of(r->obj, "tls.crt"), *key = data_of(r->obj, "tls.key"), *ca = data_of(r->obj, "ca.crt");
    const char **names = calloc(RDC_SPEC_CLUSTER_SIZE_MAX, sizeof(*names));
    char *all = NULL;
    size_t n = 0;
    int rc = !names || pod_names(s, names, &n, &all) ? -1 : 0;
    if (!rc)
        tlscert_check(crt, len_of(crt), key, len_of(key), ca, len_of(ca), names, n, now_s, SECRETSET_WARN_S,
                      &s->tls.check);
    free(all);
    free(names);
    char err[256];
    int pair = s->spec->tls.client_auth;
    redis_tls_config_t cfg = {.ca_pem = ca, .ca_len = len_of(ca), .cert_pem = pair ? crt : NULL,
                              .cert_len = pair ? len_of(crt) : 0, .key_pem = pair ? key : NULL,
                              .key_len = pair ? len_of(key) : 0};
    if (!rc && ca && !(s->client = redis_tls_new(&cfg, err, sizeof(err))))
        snprintf(s->refused, sizeof(s->refused), "spec.tls: Secret %s/%s: %s", s->ns, sname, err);
    else if (!rc && !ca)
        snprintf(s->refused, sizeof(s->refused), "spec.tls: Secret %s/%s has no ca.crt to verify the pods with",
                 s->ns, sname);
    else
        s->refused[0] = '\0';
    wipe_str(&key);
    free(crt);
    free(ca);
    return rc;
}

/* Token i stands for secret value hash (taken). */
static void add_token(secretset_t *s, const char *user, char *hash)
{
    size_t i = s->n_sec++;
    s->hash[i] = hash;
    render_acl_hash_token(user, s->token[i], sizeof(s->token[i]));
    s->sec[i] = (redisexec_secret_t){s->token[i], hash};
}

/* The SHA-256 of text as hex (a new string), or NULL when out of memory. */
static char *sha256_of(const char *text)
{
    char *hex = malloc(65);
    if (hex && render_sha256_hex(text, strlen(text), hex)) {
        free(hex);
        hex = NULL;
    }
    return hex;
}

/* User u's password hash (a new string), or NULL with missing said. */
static char *user_hash(secretset_t *s, const rdc_acl_user_t *u)
{
    const read_t *r = answer(s, u->secret);
    char *pw = r && r->obj ? data_of(r->obj, u->key) : NULL, *hash = pw ? sha256_of(pw) : NULL;
    if (!r || !r->answered)
        snprintf(s->acl.missing, sizeof(s->acl.missing), "user %s: Secret %s/%s was not read", u->name, s->ns,
                 u->secret);
    else if (r->error[0])
        snprintf(s->acl.missing, sizeof(s->acl.missing), "user %.64s: cannot read Secret %.100s/%.100s: %.200s",
                 u->name, s->ns, u->secret, r->error);
    else if (!r->obj)
        snprintf(s->acl.missing, sizeof(s->acl.missing), "user %s: Secret %s/%s not found", u->name, s->ns,
                 u->secret);
    else if (!pw || !*pw)
        snprintf(s->acl.missing, sizeof(s->acl.missing), "user %s: Secret %s/%s has no key \"%s\" (base64 text)",
                 u->name, s->ns, u->secret, u->key);
    wipe_str(&pw);
    return hash;
}

/* spec.acl: the hashes (tokens) and fingerprints. Returns 0, or -1 when out of memory. */
static int finish_acl(secretset_t *s, const char *password)
{
    char acl[300];
    snprintf(acl, sizeof(acl), "%s" RENDER_ACL_SUFFIX, s->name);
    const read_t *file = answer(s, acl);
    s->acl.secret = file ? file->obj : NULL;
    if (!password || !*password) {
        snprintf(s->acl.missing, sizeof(s->acl.missing), "spec.auth's password (the default user's) is not known");
        return 0;
    }
    if (file && file->error[0]) {
        snprintf(s->acl.missing, sizeof(s->acl.missing), "cannot read Secret %.100s/%.120s: %.250s", s->ns, acl,
                 file->error);
        return 0;
    }
    buf_t users, dflt;
    buf_init(&users, 0);
    buf_init(&dflt, 0);
    char *h = sha256_of(password);
    int rc = !h;
    if (h)
        add_token(s, "default", h);
    rc = rc || buf_printf(&dflt, "%s\ndefault\n%s", s->uid, h) || buf_printf(&users, "%s\n", s->uid);
    for (size_t i = 0; i < s->spec->acl.n_users && !rc && !s->acl.missing[0]; i++) {
        const rdc_acl_user_t *u = &s->spec->acl.users[i];
        if ((h = user_hash(s, u)) != NULL) {
            add_token(s, u->name, h);
            rc = buf_printf(&users, "%s\n%s\n", u->name, h);
        }
    }
    rc = rc || render_sha256_hex(users.data, users.len, s->acl.users_fp) ||
         render_sha256_hex(dflt.data, dflt.len, s->acl.default_fp);
    s->acl.known = !rc && !s->acl.missing[0];
    if (users.data)
        explicit_bzero(users.data, users.alloc);
    if (dflt.data)
        explicit_bzero(dflt.data, dflt.alloc);
    buf_free(&users);
    buf_free(&dflt);
    return rc ? -1 : 0;
}

int secretset_finish(secretset_t *s, const char *password, int64_t now_s)
{
    if (s->spec->tls.secret && finish_tls(s, now_s))
        return -1;
    return s->spec->acl.n_users ? finish_acl(s, password) : 0;
}

const plan_tls_t *secretset_tls(const secretset_t *s)
{
    return s->spec->tls.secret ? &s->tls : NULL;
}

const plan_acl_t *secretset_acl(const secretset_t *s)
{
    return s->spec->acl.n_users ? &s->acl : NULL;
}

const redis_tls_t *secretset_client_tls(const secretset_t *s)
{
    return s->client;
}

const char *secretset_refused(const secretset_t *s)
{
    return s->spec->tls.secret && !s->client ? s->refused : NULL;
}

const char *secretset_domain(const secretset_t *s)
{
    return s->domain;
}

const redisexec_secret_t *secretset_tokens(const secretset_t *s, size_t *n)
{
    *n = s->n_sec;
    return s->sec;
}
