/* secretset: the Secrets a reconcile reads for spec.tls and spec.acl (besides spec.auth's
 * and its record, reconcile.c), and what it makes of them (docs/tls-and-acl.md):
 *
 *   - spec.tls's Secret (tls.crt, tls.key, ca.crt): the client settings the executor
 *     speaks TLS with (redis_tls_new: ca.crt trusted, tls.crt and tls.key presented when
 *     clientAuth asks for them; made afresh by every reconcile, so a renewed Secret is
 *     spoken with at once), and the checks of the TLSReady condition (plan_tls_t:
 *     tlscert_check for every pod's name <pod>.<name>.<namespace>.svc);
 *   - the Secret <name>-redis-acl the operator writes (plan_acl_t.secret), and each ACL
 *     user's password Secret (distinct names read once): the password hashes (SHA-256,
 *     as Redis's ACL takes them with #) the executor puts in place of the tokens
 *     ${acl-hash:<user>} (the default user's from spec.auth's password), and the
 *     fingerprints the plan compares (plan_acl_t: salted with the RedisCluster's uid; no
 *     password or hash ever reaches the plan, a log or an annotation).
 *
 * No I/O: the caller reads the Secrets (secretset_names says which) and hands each answer
 * in (secretset_take). Passwords and hashes are wiped when the set goes; no error line
 * holds one.
 */
#ifndef RDC_WORKERD_SECRETSET_H
#define RDC_WORKERD_SECRETSET_H

#include "kube_error.h"
#include "plan.h"
#include "rdc_spec.h"
#include "redis_tls.h"
#include "redisexec.h"

#include <json-c/json.h>
#include <stdint.h>

#define SECRETSET_MAX (2 + RDC_SPEC_ACL_USERS_MAX) /* Secrets read: tls, the ACL file, users' */
#define SECRETSET_WARN_S (INT64_C(14) * 86400)     /* TLSCertificateExpiring: 14 days at most ahead */

typedef struct secretset secretset_t;

/* A set for the RedisCluster ns/name (uid: its metadata.uid, the fingerprints' salt) with
 * spec (borrowed: it must outlive the set). NULL when out of memory. */
secretset_t *secretset_new(const rdc_spec_t *spec, const char *ns, const char *name, const char *uid);

/* Wipe and free; *s_p = NULL. NULL is fine. */
void secretset_destroy(secretset_t **s_p);

/* The i-th Secret to read (in the cluster's namespace), NULL past the last: spec.tls's,
 * <name>-redis-acl, then the users' Secrets, each name once. */
const char *secretset_name(const secretset_t *s, size_t i);

/* The answer of the read of Secret name: obj (borrowed; NULL: it does not exist) when err
 * is NULL or KERR_OK, else the failure. A name not asked for is ignored. */
void secretset_take(secretset_t *s, const char *name, const json_object *obj, const kube_error_t *err);

/* Make what the answers say, with spec.auth's password (NULL: not known) at now_s (Unix
 * seconds). Returns 0, or -1 when out of memory. */
int secretset_finish(secretset_t *s, const char *password, int64_t now_s);

/* After secretset_finish: what the plan reads (NULL when the spec has no tls / no ACL
 * users); the executor's TLS settings (NULL: plain text), why there are none although
 * spec.tls asks for TLS (NULL: not refused), the headless Service's domain
 * "<name>.<namespace>.svc", and the tokens (*n of them). All borrowed from the set. */
const plan_tls_t *secretset_tls(const secretset_t *s);
const plan_acl_t *secretset_acl(const secretset_t *s);
const redis_tls_t *secretset_client_tls(const secretset_t *s);
const char *secretset_refused(const secretset_t *s);
const char *secretset_domain(const secretset_t *s);
const redisexec_secret_t *secretset_tokens(const secretset_t *s, size_t *n);

#endif
