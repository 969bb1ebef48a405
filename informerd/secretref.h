/* secretref: informerd's index from a Secret to the RedisClusters that name it
 * (spec.auth.secretRef, spec.tls.secretRef, spec.acl.users[].passwordSecretRef), so that
 * a change of the Secret (a password rotation, a renewed certificate, an ACL user's new
 * password) enqueues exactly those clusters at once instead of waiting for their next
 * reconcile (docs/replication.md, docs/tls-and-acl.md). Pure: no I/O, no clock.
 *
 * Keys are "namespace/name": a RedisCluster's key, and the Secret's (a secretRef is a
 * name in the cluster's own namespace). A cluster references up to SECRETREF_MAX
 * Secrets; setting its references again replaces the old ones. The index copies every
 * string it keeps.
 *
 * And the form a Secret is cached in: its metadata only (secretref_metadata_only), so that
 * no Secret data is ever cached or published on the deltas socket.
 */
#ifndef RDC_INFORMERD_SECRETREF_H
#define RDC_INFORMERD_SECRETREF_H

#include <json-c/json.h>
#include <stddef.h>

typedef struct secretref secretref_t;

/* A new empty index, or NULL when out of memory. */
secretref_t *secretref_new(void);

/* Free the index and everything it holds; *self_p = NULL. NULL is ignored. */
void secretref_destroy(secretref_t **self_p);

/* spec.auth.secretRef.name of the RedisCluster rc, or NULL when absent, empty or not a
 * string. Points into rc. */
const char *secretref_of(const json_object *rc);

#define SECRETREF_MAX 24 /* Secrets one RedisCluster names: auth, tls, and its ACL users' */

/* Every Secret rc names (spec.auth's, spec.tls's, each ACL user's; each once, at most
 * cap) into names (pointing into rc). Returns how many. */
size_t secretref_of_all(const json_object *rc, const char **names, size_t cap);

/* Record that the RedisCluster rc_key ("ns/name") references the Secret secret_name in
 * its namespace (its only one); NULL or "" = it references none (as secretref_forget).
 * Returns 0, or -1 when out of memory or rc_key has no '/' (the index is then
 * unchanged). */
int secretref_set(secretref_t *x, const char *rc_key, const char *secret_name);

/* The same with the Secrets names[0..n) (distinct; past SECRETREF_MAX ignored; n 0 = none). */
int secretref_set_all(secretref_t *x, const char *rc_key, const char *const *names, size_t n);

/* Forget rc_key's reference (a deleted RedisCluster). Never fails. */
void secretref_forget(secretref_t *x, const char *rc_key);

/* Call fn(ud, rc_key) for every RedisCluster that references the Secret secret_key
 * ("ns/name"), in no particular order; fn must not change the index. Returns how many. */
size_t secretref_each(const secretref_t *x, const char *secret_key, void (*fn)(void *ud, const char *rc_key),
                      void *ud);

/* Reduce the Secret obj (edited in place) to apiVersion, kind and metadata. The API
 * sends PartialObjectMetadata already (informerd lists and watches Secrets that way);
 * this drops anything else all the same. Returns 0, or -1 when obj is not an object. */
int secretref_metadata_only(json_object *obj);

/* How many RedisClusters reference some Secret. */
size_t secretref_count(const secretref_t *x);

#endif
