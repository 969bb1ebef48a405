/* cache: informerd's object cache, its indexes and its delta stream.
 *
 * One store per watched kind holds the objects by key "namespace/name" ("name" for
 * cluster-scoped objects), with their resourceVersion, UID and metadata.generation.
 * Objects are kept as controller-runtime's cache keeps them (metadata.managedFields is
 * stripped first), or, for a kind with a projection (cache_set_projection), only the parts
 * the operator reads (docs/projections.md); and as compact JSON text rather than parsed
 * trees: everything the cache's readers do with an object (publish a delta, answer a
 * snapshot, hand a key to a worker) sends text, and a json-c tree costs ~15x its text in
 * heap (bench-informer).
 *
 * Indexes: by UID per kind, and by controller owner: a child is indexed under the UID of
 * its metadata.ownerReferences[] entry with controller: true and kind == the owner kind
 * (RedisCluster), and for kinds owned by label (cache_set_owner_label: Pods) by the owner
 * key their label names. cache_owner_key() maps any object to the key of the RedisCluster it
 * concerns, so that every change reaches the work queue under the right key.
 *
 * Every change is a delta with a sequence number, handed synchronously to the delta
 * handler (cache_set_delta_handler) while the objects it names are alive: the caller
 * maps it to queue keys and publishes it. cache_replace() turns a relist into exactly
 * the deltas that make the old cache equal to the list (invariant 5). cache_snapshot()
 * visits every object at sequence number S, so that a late subscriber applies only the
 * deltas after S (the ZeroMQ guide's Clone pattern).
 *
 * Bad input (not an object, no metadata.name, wrong kind, non-string fields) is refused
 * with a message naming the kind, the object and what is wrong; the cache is unchanged.
 *
 * Ownership: the cache keeps a copy (the text) of every object it is given; the caller
 * keeps its tree. The cache edits the trees it is given (it removes managedFields), so
 * give it objects nobody else reads. Strings and items the cache returns are borrowed:
 * valid until the next call that modifies the cache; callers must not modify them.
 * Callbacks (delta handler and visitors) must not modify the cache. Single-threaded.
 */
#ifndef RDC_INFORMERD_CACHE_H
#define RDC_INFORMERD_CACHE_H

#include "buf.h"
#include "projection.h"

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cache cache_t;

typedef enum {
    CACHE_UNCHANGED = 0, /* same resourceVersion: no delta */
    CACHE_ADDED,
    CACHE_MODIFIED,
    CACHE_DELETED,
    CACHE_SYNC /* periodic resync: the object again, unchanged */
} cache_change_t;

/* A cached object and what the cache knows about it. */
typedef struct {
    const char *kind;
    const char *key;              /* "namespace/name", or "name" when cluster-scoped */
    const char *resource_version; /* NULL when the object has none */
    const char *uid;              /* NULL when the object has none */
    const char *owner_uid;        /* UID of its controller owner of the owner kind, or NULL */
    const char *json;             /* the object, compact JSON text (NUL-terminated) */
    size_t json_len;
    int64_t generation;           /* metadata.generation, 0 when absent */
    uint64_t seq;                 /* sequence number of the delta that last changed it */
    size_t truncated;             /* 0: json is the whole object. Otherwise json is its
                                     minimal form (cache_minimal_form): the object was this
                                     many bytes, over the cache's limit, or 1 when only its
                                     metadata came (cache_relist_add_partial) */
    int deleting;                 /* metadata.deletionTimestamp is set */
} cache_item_t;

/* One change. item is the object as cached now; for DELETED, the last cached object
 * (freed after the handler returns). old_generation is the previous object's
 * metadata.generation for a MODIFIED (0 otherwise), so that a handler can tell a spec
 * change from a status or metadata change. unread_only is 1 for a MODIFIED of a kind with
 * a projection (cache_set_projection) when nothing its READ rows name changed (the
 * digests of the old and new object are equal, and neither is in minimal form): a change
 * no plan reads (nor its LATE rows). late_only is 1 for a MODIFIED whose READ rows are
 * the same and LATE rows (projection.h PROJ_LATE) are not: a change read only once the
 * object is PROJ_LATE_AFTER_NS old. 0 for every other delta. old_resource_version lets a
 * handler tell a watch's next version from a relist that skipped some (informerd/echo.h). */
typedef struct {
    uint64_t seq;
    cache_change_t type;
    const cache_item_t *item;
    int64_t old_generation;
    int unread_only;
    int late_only;
    const char *old_resource_version; /* a MODIFIED's previous resourceVersion (NULL when
                                         it had none, or longer than CACHE_OLD_RV_MAX),
                                         valid during the handler; NULL otherwise */
} cache_delta_t;

#define CACHE_OLD_RV_MAX 64 /* longest previous resourceVersion a delta carries */

/* Delta handler; called synchronously for every delta, in sequence order. */
typedef void (*cache_delta_fn)(void *ud, const cache_delta_t *delta);

/* Visitor; return nonzero to stop the iteration. */
typedef int (*cache_visit_fn)(void *ud, const cache_item_t *item);

/* "ADDED", "MODIFIED", "DELETED", "SYNC" or "UNCHANGED". */
const char *cache_change_name(cache_change_t type);

/* A new, empty cache whose owner kind (controller owner of every child, e.g.
 * "RedisCluster") is watched from the start. NULL when out of memory or owner_kind is
 * NULL/empty. */
cache_t *cache_new(const char *owner_kind);

/* Free the cache and release every object; sets *self_p to NULL. NULL is ignored. */
void cache_destroy(cache_t **self_p);

/* Watch kind too (a child kind: "ConfigMap", "Service", "StatefulSet"). Registering a
 * kind twice is harmless. Returns 0, or -1 when out of memory or kind is NULL/empty. */
int cache_add_kind(cache_t *c, const char *kind);

/* Bound the text kept per object (0 = no bound, the default): an object whose compact
 * JSON (managedFields stripped) is longer than max is kept in its minimal form instead
 * (cache_minimal_form), with item->truncated set to its length. So memory per object is
 * bounded, and the object is still there to be named, mapped to its owner's key, and
 * deleted (its finalizers and deletionTimestamp are kept). */
void cache_set_max_object_bytes(cache_t *c, size_t max);

/* Keep and compare the objects of kind by p (projection.h): every object of kind stored
 * from now on is kept in its compact form (p's READ, KEEP and WRITE rows; the bound of
 * cache_set_max_object_bytes applies to it) and carries the digest of its READ parts, and
 * a MODIFIED whose digest equals the previous one is emitted with unread_only set. p NULL
 * (the default) keeps whole objects and compares nothing. Returns 0, or -1 when kind is
 * not watched or is the owner kind. */
int cache_set_projection(cache_t *c, const char *kind, const projection_t *p);

/* The annotation a minimal form carries, saying why the object is not whole. */
#define CACHE_TRUNCATED_ANNOTATION "cache.example.com/informer-truncated"

/* A new object with only apiVersion, kind and metadata's name, namespace, uid,
 * resourceVersion, generation, creationTimestamp, deletionTimestamp,
 * deletionGracePeriodSeconds, ownerReferences and finalizers of obj (shared with obj, not
 * copied), plus the annotation CACHE_TRUNCATED_ANNOTATION = why. No spec, data, status,
 * labels or other annotations: what identifies the object and what its deletion needs
 * (workerd's plan removes its finalizer from exactly these). The caller puts it; NULL
 * when out of memory. */
json_object *cache_minimal_form(json_object *obj, const char *why);

/* Set the delta handler (NULL = none). */
void cache_set_delta_handler(cache_t *c, cache_delta_fn fn, void *ud);

/* Add or replace obj (an object of kind, from a watch event or a get). *change (when not
 * NULL) says what happened: ADDED, MODIFIED, or UNCHANGED when the cached object has the
 * same resourceVersion (the cached one is kept, no delta). An object without a
 * resourceVersion always counts as MODIFIED. Returns 0, or -1 with a message in err (kind
 * not watched, bad object, out of memory); the cache is then unchanged. */
int cache_upsert(cache_t *c, const char *kind, json_object *obj, cache_change_t *change,
                 char *err, size_t errlen);

/* Remove the object of kind at key ("namespace/name"). *change (when not NULL) is
 * DELETED, or UNCHANGED when nothing was cached at key. Returns 0, or -1 with a message
 * in err when kind is not watched or key is NULL. */
int cache_delete(cache_t *c, const char *kind, const char *key, cache_change_t *change,
                 char *err, size_t errlen);

/* Make the store of kind equal to items (the JSON array of a fresh list), emitting the
 * differences: ADDED for new keys, MODIFIED where the resourceVersion differs, nothing
 * where it is equal, and DELETED for cached keys absent from the list. Every item is
 * checked first: when any is bad (or a key appears twice) the whole list is refused with
 * a message naming items[i], and the cache is unchanged. Returns 0, or -1 with a message
 * in err. Running out of memory midway returns -1 with the cache partly updated; the
 * deltas emitted so far describe exactly what changed, and the caller relists again. */
int cache_replace(cache_t *c, const char *kind, json_object *items, char *err,
                  size_t errlen);

/* cache_replace in steps, for a list that arrives page by page: begin, then add each
 * page's items (a JSON array, checked as cache_replace checks a list: a bad item refuses
 * the whole page), then end, which deletes the cached objects of kind no page since the
 * begin has mentioned. Deltas are emitted as the pages arrive, so a page's objects need
 * not be kept until the list is complete. A relist abandoned before end (a page failed)
 * leaves the cache as the pages so far made it: each delta described a real change, and
 * the next begin starts over. Returns 0, or -1 with a message in err. */
int cache_relist_begin(cache_t *c, const char *kind, char *err, size_t errlen);
int cache_relist_add(cache_t *c, const char *kind, json_object *items, char *err, size_t errlen);
int cache_relist_end(cache_t *c, const char *kind, char *err, size_t errlen);

/* cache_relist_add for items of which only the metadata came (the objects a LIST page
 * could not hold, as PartialObjectMetadata: kube_pager_take_skipped): each is kept in
 * its minimal form with why (NULL: a default text) as its annotation and
 * item->truncated = 1. Same checks and results as cache_relist_add. */
int cache_relist_add_partial(cache_t *c, const char *kind, json_object *items, const char *why,
                             char *err, size_t errlen);

/* Emit a SYNC delta for every object of kind (NULL = every kind), as a periodic resync
 * does. Returns the number of deltas emitted. */
size_t cache_resync(cache_t *c, const char *kind);

/* The cached object of kind at key as compact JSON text, or NULL. */
const char *cache_get_json(const cache_t *c, const char *kind, const char *key);

/* Append to out one JSON object {"<kind>":<the cached object of that kind at key, or
 * null>, ...} for each of the nkinds kinds, from the cached text (a work item's
 * children). Returns 0, or -1 when out's cap or memory ran out (out is then unusable). */
int cache_children_json(const cache_t *c, const char *key, const char *const *kinds, size_t nkinds, buf_t *out);

/* Objects of kind (not the owner kind) that have no controller owner of the owner kind
 * belong to the owner named by their label `label` in their own namespace: a Pod, whose
 * controller is its StatefulSet, belongs to the RedisCluster its
 * app.kubernetes.io/instance label names. cache_item_owner_key then maps it to that key,
 * and cache_label_children_json lists the objects of kind by that key. Set before the
 * first object of kind is stored. Returns 0, or -1 (kind not watched, the owner kind,
 * objects already stored, or out of memory). */
int cache_set_owner_label(cache_t *c, const char *kind, const char *label);

/* Objects of kind (not the owner kind) belong to the owner named by the string at the
 * dotted path (from the object's root) in their own namespace, whatever their
 * ownerReferences say: a RedisBackup belongs to the RedisCluster its spec.source.cluster
 * names (one the operator created for a schedule is also owned by it). Mapped and listed
 * as the objects owned by label are (cache_item_owner_key, cache_label_children_json).
 * Set before the first object of kind is stored. Returns 0, or -1 (kind not watched, the
 * owner kind, objects already stored, or out of memory). */
int cache_set_owner_field(cache_t *c, const char *kind, const char *path);

/* Append to out a JSON array of the cached texts of the objects of kind (NULL = any
 * kind owned by label or field) that belong by label to the owner key, in no particular order
 * ("[]" when none). Returns 0, or -1 when out's cap or memory ran out. */
int cache_label_children_json(const cache_t *c, const char *kind, const char *key, buf_t *out);

/* The cached object of kind at key parsed into a new tree (the caller puts it), or NULL
 * when nothing is cached there or memory ran out. */
json_object *cache_get_parsed(const cache_t *c, const char *kind, const char *key);

/* The cached item of kind at key, or NULL. */
const cache_item_t *cache_lookup(const cache_t *c, const char *kind, const char *key);

/* The cached item of kind with this UID, or NULL. */
const cache_item_t *cache_lookup_uid(const cache_t *c, const char *kind, const char *uid);

/* Number of objects of kind (NULL = every kind). */
size_t cache_count(const cache_t *c, const char *kind);

/* Visit every object of kind (NULL = every kind, in registration order), in no
 * particular order within a kind. Returns the number of objects visited. */
size_t cache_foreach(const cache_t *c, const char *kind, cache_visit_fn visit, void *ud);

/* Sequence number of the last delta (0 before the first). */
uint64_t cache_seq(const cache_t *c);

/* Visit every object of kind (NULL = every kind) and return the sequence number S the
 * visited state corresponds to: a subscriber that applies this snapshot and then the
 * deltas with seq > S is up to date. */
uint64_t cache_snapshot(const cache_t *c, const char *kind, cache_visit_fn visit, void *ud);

/* Visit the cached objects of kind (NULL = every kind) whose controller owner has UID
 * owner_uid. Returns the number visited. */
size_t cache_children_of(const cache_t *c, const char *owner_uid, const char *kind,
                         cache_visit_fn visit, void *ud);

/* The key of the owner-kind object obj (of kind) concerns, written to out: obj's own key
 * when kind is the owner kind; otherwise the key of the cached owner with the UID of obj's
 * controller ownerReference of the owner kind, or, when that owner is not cached (yet),
 * the reference's name in obj's namespace. Returns 0; 1 when obj has no such controller
 * owner, or one with neither a cached UID nor a name (not ours: out is ""); -1 when obj
 * is not a valid object of kind, out is too small or memory ran out. */
int cache_owner_key(const cache_t *c, const char *kind, json_object *obj, char *out,
                    size_t outlen);

/* cache_owner_key for a cached item, from what the cache recorded when it stored it (no
 * parsing). Same results. */
int cache_item_owner_key(const cache_t *c, const cache_item_t *item, char *out, size_t outlen);

#endif
