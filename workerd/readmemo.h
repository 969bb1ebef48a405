/* readmemo: what this worker process read from the API lately, by key, for a while.
 *
 * Some reads a reconcile makes are not served by the informer cache (the StorageClass a
 * cluster's claims name; the pods and Events a diagnosis reads, reconcile.c) and would
 * otherwise go out again at every reconcile of a converging cluster: at 100 clusters
 * starting at once, each worker spent most of its time in those blocking LISTs. The memo
 * keeps each answer (a JSON value, or "nothing found") under a key that names what it
 * depends on, for ttl: a key whose inputs changed is another key, and one that did not
 * is read again once ttl has passed. Bounded: slots entries, the oldest make room.
 * Single-threaded; no I/O; the clock is the caller's.
 */
#ifndef RDC_READMEMO_H
#define RDC_READMEMO_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

typedef struct readmemo readmemo_t;

/* A new, empty memo of at most slots entries (>= 1), each good for ttl_ns after it was
 * kept; NULL when out of memory. */
readmemo_t *readmemo_new(size_t slots, int64_t ttl_ns);

/* Free the memo (the values it holds are put) and set *m_p to NULL. NULL is fine. */
void readmemo_destroy(readmemo_t **m_p);

/* The entry kept for key at most ttl before now_ns: 1 and *value = a new reference to
 * its value (the caller puts it; NULL when the read found nothing), or 0 (*value NULL)
 * when there is none or it is too old. */
int readmemo_get(readmemo_t *m, const char *key, int64_t now_ns, json_object **value);

/* Keep value (a new reference is taken; NULL = found nothing) for key, read at now_ns,
 * replacing what key held; when full, the entry kept longest ago makes room. Returns 0,
 * or -1 when out of memory (nothing kept). */
int readmemo_put(readmemo_t *m, const char *key, json_object *value, int64_t now_ns);

/* Forget every entry. */
void readmemo_clear(readmemo_t *m);

/* How many entries are kept (old ones included until replaced). */
size_t readmemo_count(const readmemo_t *m);

#endif
