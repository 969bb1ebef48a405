/* existsmemo: the children known to exist outside the informer cache, per worker process.
 *
 * The cache holds only the operator's labelled children, so an unlabelled object of a
 * child's name (a user's ConfigMap, an earlier operator's Service) looks absent there.
 * Reading every absent child by name costs a new cluster one GET per child, all 404.
 * Instead, as controller-runtime trusts its synced cache, a child absent from the cache
 * is created (PLAN_CREATE is a POST: on an object that exists the API answers 409
 * AlreadyExists and changes nothing, so nothing is ever taken over), and this memo
 * remembers the name a create met 409 on, so that the next reconcile reads it by name
 * (reconcile.c, find_absent_children) and the plan sees the object (plan.h OWNERSHIP):
 * a 409 never makes a key retry the create for ever.
 *
 * A name is a (resource, namespace, name) triple, kept as a 64-bit hash: a collision can
 * only make a reconcile read a child it need not read, or forget one (then its create
 * meets 409 once more and the name is kept again); the safety is the create's, never the
 * memo's. The memo is bounded (EXISTSMEMO_CAP names). When a name cannot be kept (full),
 * the memo is saturated: the caller reads every absent child, as without a memo, until
 * drops bring it down to half the capacity. Names leave it when a read answers 404 or
 * the child appears in the cache (existsmemo_drop). Single-threaded; no I/O, no clock.
 */
#ifndef RDC_EXISTSMEMO_H
#define RDC_EXISTSMEMO_H

#include <stddef.h>

#define EXISTSMEMO_CAP 512

typedef struct existsmemo existsmemo_t;

/* A new, empty memo holding at most cap names (0 = EXISTSMEMO_CAP); NULL when out of
 * memory. */
existsmemo_t *existsmemo_new(size_t cap);

/* Free the memo and set *m_p to NULL. NULL is fine. */
void existsmemo_destroy(existsmemo_t **m_p);

/* Keep resource/ns/name. Returns 0 (kept, or kept already), or -1 when the memo is full
 * (nothing changed but the memo is saturated from then on). */
int existsmemo_add(existsmemo_t *m, const char *resource, const char *ns, const char *name);

/* Forget resource/ns/name (nothing when it is not kept); a saturated memo is no longer
 * saturated once it holds at most half its capacity. */
void existsmemo_drop(existsmemo_t *m, const char *resource, const char *ns, const char *name);

/* 1 when resource/ns/name is kept, else 0. */
int existsmemo_has(const existsmemo_t *m, const char *resource, const char *ns, const char *name);

/* 1 when a name could not be kept since the memo last held at most half its capacity:
 * the caller must not rely on the memo then. */
int existsmemo_saturated(const existsmemo_t *m);

/* How many names are kept. */
size_t existsmemo_count(const existsmemo_t *m);

#endif
