/* classcheck: may spec.storage.size grow on this StorageClass? (issue 34)
 *
 * The API server refuses to grow a PersistentVolumeClaim whose StorageClass does not set
 * allowVolumeExpansion: true, so the validating webhook refuses such a RedisCluster
 * update itself, with the reason, instead of letting the operator's claim patch fail
 * later (docs/knobs.md, "Growing the volumes").
 *
 *   classcheck_decide(old size, new size, class name, what was read | read error)
 *       -> allow, or the refusal's detail            (pure: no I/O, tested by a table)
 *   classcheck_read_start(class | every class)        (the thin shell: one GET or LIST on
 *       -> done(what was read | why not)               the event loop, with a deadline)
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

#include <event2/event.h>
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

/* The shell: reads StorageClasses on the caller's libevent loop (evcurl.h), never
 * blocking it: a read is started, the loop serves everything else meanwhile, and the
 * answer comes to a callback. One attempt, with a deadline of the reader's timeout
 * (CLASSCHECK_TIMEOUT_MS): curl aborts it then, well inside the webhook's timeoutSeconds
 * (5 s in deploy/), and the failure refuses the growth like any failed read. */
typedef struct classcheck_reader classcheck_reader_t;
typedef struct classcheck_read classcheck_read_t;

#define CLASSCHECK_TIMEOUT_MS 2000      /* a read's deadline, from its start */
#define CLASSCHECK_MAX_DEPTH 64         /* JSON nesting accepted in an answer */
#define CLASSCHECK_LIST_CAP ((size_t)8 << 20) /* bytes of the LIST of every class kept */

/* A reader on base with client (both borrowed: they must outlive the reader). client
 * NULL: there is a Kubernetes configuration but no client could be made from it; every
 * read then fails with why_none (copied), so growth is refused (fail closed). NULL when
 * out of memory. */
classcheck_reader_t *classcheck_reader_new(struct event_base *base, kube_client_t *client, const char *why_none);

/* A read's deadline in milliseconds from its start (tests: a short one); at least 1. */
void classcheck_reader_set_timeout(classcheck_reader_t *r, int timeout_ms);

/* Cancel every read still in flight (their done is never called), free the reader and
 * set *self_p to NULL. NULL-safe. */
void classcheck_reader_destroy(classcheck_reader_t **self_p);

/* A read ended: read is what the API server answered (cls set: the StorageClass object;
 * cls NULL: the array of every StorageClass, a LIST's items), or NULL with err saying why
 * it could not be read (the API server's status, the deadline, ...: kube_error_str's,
 * bounded). Both are borrowed for the call only (json_object_get to keep read). */
typedef void classcheck_done_fn(const json_object *read, const char *err, void *arg);

/* Start reading: cls set: GET the StorageClass cls; cls NULL: LIST every StorageClass
 * (one request, no paging: a cluster has a handful). done(…, arg) is called once, from
 * the loop (never from inside this call, a failure before sending included), by the
 * deadline; the read is freed when done returns (drop the pointer there). Returns the
 * read, or NULL when out of memory (done never called). */
classcheck_read_t *classcheck_read_start(classcheck_reader_t *r, const char *cls, classcheck_done_fn *done,
                                         void *arg);

/* Abandon a read: its request is dropped, done is not called; *read_p = NULL. NULL-safe.
 * Not from inside its own done. */
void classcheck_read_cancel(classcheck_read_t **read_p);

#endif
