/* metrics_auth: who may read /metrics, decided as controller-runtime's
 * filters.WithAuthenticationAndAuthorization decides it (since 0.16).
 *
 * A scraper sends "Authorization: Bearer <token>". The token is authenticated by a
 * TokenReview (authentication.k8s.io/v1) and the user it names is authorized by a
 * SubjectAccessReview (authorization.k8s.io/v1) for the non-resource URL /metrics, verb
 * get. The answers: 200 (allowed), 401 (no bearer token, or the API server does not know
 * it), 403 (known, not allowed), 500 (the API server could not be asked; not cached).
 *
 * Decisions are cached by SHA-256 of the token (the token itself is never kept): an allow
 * for MAUTH_ALLOW_TTL_NS, a 403 for MAUTH_DENY_TTL_NS, a 401 for MAUTH_UNAUTH_TTL_NS
 * (controller-runtime caches authentication 1 min and authorization 5 min / 30 s; ours are
 * shorter, so a revoked binding stops working within a minute). The cache holds at most
 * its capacity: a new entry replaces an expired one, else the one that expires first.
 *
 * The cache and the JSON steps are pure (an explicit clock, no network); the shell that
 * asks the API server, on the daemon's loop, is metrics_serve.h.
 */
#ifndef RDC_METRICS_AUTH_H
#define RDC_METRICS_AUTH_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#define MAUTH_ALLOW_TTL_NS (INT64_C(60) * 1000000000)
#define MAUTH_DENY_TTL_NS (INT64_C(30) * 1000000000)
#define MAUTH_UNAUTH_TTL_NS (INT64_C(10) * 1000000000)
#define MAUTH_DEFAULT_CAPACITY 1024
#define MAUTH_MAX_TOKEN 8192

typedef struct mauth_cache mauth_cache_t;

/* A cache of at most capacity (>= 1) decisions; NULL when out of memory. */
mauth_cache_t *mauth_cache_new(size_t capacity);

/* Free; sets *self_p to NULL. NULL is fine. */
void mauth_cache_destroy(mauth_cache_t **self_p);

/* The cached decision (200, 401 or 403) for the token's hash at now_ns, or 0 when there
 * is none or it has expired. */
int mauth_cache_get(const mauth_cache_t *c, const unsigned char hash[32], int64_t now_ns);

/* Remember decision (200, 401 or 403; anything else is not cached) for hash from now_ns
 * with the TTL of its kind, replacing an older entry of the same hash. Never fails: when
 * full, an expired entry or the one expiring first makes room. */
void mauth_cache_put(mauth_cache_t *c, const unsigned char hash[32], int decision, int64_t now_ns);

/* Entries held (expired ones included until replaced). */
size_t mauth_cache_size(const mauth_cache_t *c);

/* The token of an Authorization header value: "Bearer <token>" (scheme case-insensitive,
 * spaces after it skipped). Returns a pointer into header, or NULL when header is NULL, of
 * another scheme, or the token is empty, longer than MAUTH_MAX_TOKEN or holds a space. */
const char *mauth_bearer(const char *header);

/* The TokenReview to POST for token (caller owns), NULL when out of memory. */
json_object *mauth_token_review(const char *token);

/* From a TokenReview answer: 1 when status.authenticated is true and status.user.username
 * is set, with *user borrowed from review (status.user); else 0. */
int mauth_token_review_user(json_object *review, json_object **user);

/* The SubjectAccessReview to POST for the user of a TokenReview (username, uid, groups,
 * extra copied): may it get the non-resource URL path? Caller owns; NULL when out of
 * memory. */
json_object *mauth_access_review(json_object *user, const char *path);

/* From a SubjectAccessReview answer: 1 when status.allowed is true (and status.denied is
 * not), else 0. */
int mauth_access_allowed(json_object *review);

#endif
