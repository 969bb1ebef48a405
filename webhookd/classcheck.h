/* classcheck: may spec.storage.size grow on this StorageClass? (issue 34)
 *
 * The API server refuses to grow a PersistentVolumeClaim whose StorageClass does not set
 * allowVolumeExpansion: true, so the validating webhook refuses such a RedisCluster
 * update itself, with the reason, instead of letting the operator's claim patch fail
 * later (docs/knobs.md, "Growing the volumes").
 *
 *   classcheck_decide(old size, new size, class name, what was read | read error)
 *       -> allow, or the refusal's detail            (pure: no I/O, tested by a table)
 *   classcheck_reader_*                               (the thin shell: one GET or LIST)
 *
 * Only an UPDATE whose effective storage size grows calls the reader, so every other
 * review stays free of API calls. The decision fails closed: a class that cannot be read,
 * or a cluster without (or with an ambiguous) default class, refuses the growth with a
 * message that says why and that the change may be retried.
 */
#ifndef RDC_CLASSCHECK_H
#define RDC_CLASSCHECK_H

#include "buf.h"
#include "kube_client.h"

#include <json-c/json.h>
#include <stddef.h>

/* The annotations that make a StorageClass the cluster's default (value "true"). */
#define CLASSCHECK_DEFAULT_ANNOTATION "storageclass.kubernetes.io/is-default-class"
#define CLASSCHECK_DEFAULT_ANNOTATION_BETA "storageclass.beta.kubernetes.io/is-default-class"

/* Decide whether spec.storage.size may go from old_size to new_size (spec.storage.size
 * values, valid per rdc_spec_storage_bytes; sizes that are not a growth, or not valid,
 * are allowed: the rules of rdc_spec.h judge them) on the class cls (NULL: the cluster's
 * default class). read is what the reader returned: the StorageClass object when cls is
 * set, the array of every StorageClass (a LIST's items) when it is NULL; read_err, when
 * not NULL, is why it could not be read (read is then ignored).
 * Returns 0 to allow; 1 to refuse, with the detail appended to msg (the text after
 * "spec.storage.size: Forbidden: "). A growth is allowed only when every class the claims
 * may have (the named one, or each default) has allowVolumeExpansion: true. */
int classcheck_decide(const char *old_size, const char *new_size, const char *cls, const json_object *read,
                      const char *read_err, buf_t *msg);

/* The shell: reads StorageClasses through a blocking client with a short deadline. */
typedef struct classcheck_reader classcheck_reader_t;

#define CLASSCHECK_TIMEOUT_MS 2000 /* a read, retries included */

/* A reader on client (borrowed: it must outlive the reader). client NULL: there is a
 * Kubernetes configuration but no client could be made from it; every read then fails
 * with why_none (copied), so growth is refused (fail closed). NULL when out of memory. */
classcheck_reader_t *classcheck_reader_new(kube_client_t *client, const char *why_none);

/* Free the reader; sets *self_p to NULL. NULL-safe. */
void classcheck_reader_destroy(classcheck_reader_t **self_p);

/* The admission_class_reader_fn of admission.h for a classcheck_reader_t (user): cls set:
 * GET the StorageClass cls; cls NULL: LIST every StorageClass (*out the items array).
 * Returns 0 with *out owned by the caller, or -1 with err saying why (the API server's
 * status, a timeout, ...). Blocks for at most CLASSCHECK_TIMEOUT_MS. */
int classcheck_read(void *user, const char *cls, json_object **out, char *err, size_t errlen);

#endif
