/* informer: informerd's event loop.
 *
 * One loop (zmq_poll) serves everything: the watch streams (curl's multi interface hands
 * its sockets and its one timer to this loop), the ZeroMQ sockets (deltas PUB, snapshot
 * ROUTER, work ROUTER, leader SUB, supervisor events SUB), the signalfd, and the
 * deadlines of the work queue, the resync and the reflectors' backoff.
 *
 * Reflectors (one per kind: RedisCluster, and the ConfigMaps, Services, StatefulSets,
 * PodDisruptionBudgets and Pods carrying the operator's managed-by label, each cached in
 * its compact form: what the operator reads of it, docs/projections.md; Pods belong to
 * the RedisCluster their app.kubernetes.io/instance label names; and Secrets, all of
 * them but as metadata only, PartialObjectMetadata, outside the sync gate, indexed by
 * the RedisClusters whose spec.auth names them: secretref.h): LIST with pagination, then
 * WATCH from the
 * list's resourceVersion with bookmarks and a random 5..10 min timeoutSeconds, resuming
 * each new watch from the last resourceVersion seen. As client-go's reflector: a stream
 * that ends or breaks resumes from there (at once if it had served for a second, after a
 * backoff if it could not connect, or was refused with 429/5xx, honouring Retry-After);
 * a 410, any other refusal, an ERROR event or an undecodable event ends in a relist
 * whose differences with the cache become deltas. A refused watch's body is read as the
 * Status it is, never as events. LIST
 * pages (kube_pager) and watches alike are transfers of one curl multi handle: nothing
 * the API server does blocks the loop, its heartbeats or its dispatch.
 *
 * Bounded by bytes (invariant 10): a LIST page over --max-response-bytes is asked again
 * smaller, down to one object, and an object alone over it is listed as metadata only
 * (kube_pager), so a relist always completes. An object listed that way, or longer than
 * --max-object-bytes, is cached in its minimal form (cache.h: identity, owner references,
 * finalizers, deletionTimestamp, and an annotation saying why), logged, counted in
 * informer_objects_skipped_total{kind,reason} and, once the caches synced and while this
 * replica may write, reported by a Warning Event ObjectTooLarge on it. A RedisCluster
 * that is in minimal form, or whose ConfigMap, Service or StatefulSet is, is not
 * dispatched (a worker would read the missing spec or data as a change to make) until it
 * is whole again, except when it is being deleted: then its minimal form carries all that
 * workerd's plan needs to remove the finalizer (plan.h, decision 2), so a RedisCluster
 * the operator cannot process can always be deleted.
 *
 * Sync: no key is dispatched before every reflector has listed once (controller-runtime
 * starts its workers only after WaitForCacheSync): before that, a child on a page not
 * yet listed would look absent. The log says "caches synced"; informer_cache_synced{kind}
 * says which kinds are. Not synced within --cache-sync-timeout (default 2m, as
 * controller-runtime's CacheSyncTimeout): informerd logs "timed out waiting for caches to
 * sync" with the kinds and the last error of each, and exits 1, as controller-runtime's
 * manager fails; the supervisor restarts it with its backoff and /readyz reports
 * informerd not ready (crash-looping) meanwhile. Exiting rather than waiting on: a new
 * process starts from a clean client and connection, and a stuck sync shows as restarts.
 *
 * Observations: observerd PUSHes OBSERVED key observation to the observe socket
 * (proto.h); informerd keeps the latest per cached RedisCluster (dropped with it), hands
 * it to the worker as children "Redis" beside "Pods", and queues the key. They are not
 * deltas: observerd follows the delta stream and must not hear its own news back.
 *
 * Work: keys go to idle workers only while this replica leads (or leader election is
 * off). A worker's item comes back on DONE; a worker that dies (the supervisor says so,
 * or it is silent past its deadline) gets its item requeued with a crash counted; a key
 * that kills workers three times in a row is quarantined for an hour or until its spec
 * changes, with a Warning Event and a ReconcileCrashed condition on the RedisCluster
 * (crashcond.h): a new informerd restores the quarantine from that condition, and the
 * next reconcile that completes turns it False.
 *
 * Inside, each part owns its state behind its own header: reflector.h (LIST and WATCH of
 * one kind), cache.h, deltapub.h (the delta stream, snapshots, --tail), reporter.h
 * (informerd's own writes: Events, the ReconcileCrashed condition), dispatcher.h (keys,
 * the queue, the workers, observations, quarantine, leadership); informer.c builds and
 * wires them. docs/informerd.md draws how they depend on each other and follows a change
 * from the watch to the worker.
 */
#ifndef RDC_INFORMER_H
#define RDC_INFORMER_H

#include "kube_client.h"
#include "opts.h"

#include <stdio.h>

typedef struct {
    kube_client_t *client;
    const rdc_common_opts_t *opts;  /* namespaces, leader election, sync period, grace */
    const char *runtime_dir;
    const char *name;               /* for the metrics file: $RDC_CHILD_NAME or "informerd" */
    FILE *tail;                     /* --tail: print every delta as a JSON line here */
    int serve;                      /* 1: bind the work/deltas sockets and dispatch */
    int signal_fd;
    double reconcile_timeout_s;     /* an in-flight item older than this is abandoned */
    double child_enqueue_delay_s;   /* a child's delta queues its owner this much later */
    double watch_timeout_s;         /* server-side timeout of each watch; 0 = random 5..10 min */
    int list_page_size;             /* objects per LIST page; 0 = INFORMER_LIST_PAGE_DEFAULT */
    size_t max_response_bytes;      /* the client's response cap, for messages */
    size_t max_object_bytes;        /* an object longer than this is cached in minimal form; 0 = no bound */
    double cache_sync_timeout_s;    /* exit 1 when not every kind synced by then; 0 = wait forever */
} informer_config_t;

/* A child's delta queues its RedisCluster this much later (--child-enqueue-delay). A pod's
 * progress comes as a burst: the pod's own MODIFIED, then the StatefulSet controller's
 * status update for it a few milliseconds later (and the scheduler's binding right after
 * the ADDED); queued at once, each was a reconcile of its own (bench/README.md, 28 a
 * cluster at N=100). Within this window they are one. The RedisCluster's own changes and
 * observerd's observations are queued at once. */
#define INFORMER_CHILD_ENQUEUE_DELAY_DEFAULT 0.1

/* Objects per LIST page unless told otherwise. client-go's reflector pages by 500; each
 * page is parsed whole before it becomes cache text, so the page bounds the relist's
 * memory peak. Measured, a fresh informerd listing 1000 clusters (4000 objects): peak RSS
 * 70 MB with pages of 500, 32 MB with 100, 27 MB with 50; the 1000 StatefulSets took
 * 1.8 s, 2.4 s and 2.3-3.5 s to list. */
#define INFORMER_LIST_PAGE_DEFAULT 100

/* The client's cap on one response (a LIST page), as kube_client's default. */
#define INFORMER_MAX_RESPONSE_DEFAULT (64 << 20)

/* An object whose JSON (managedFields stripped) is longer is cached in minimal form. 2 MiB
 * is above what the API server can store in one object with etcd's default request
 * limit (1.5 MiB), so by default nothing the API server accepts is cut; lower it to bound
 * the cache's memory per object more tightly. */
#define INFORMER_MAX_OBJECT_DEFAULT (2 << 20)

/* controller-runtime's CacheSyncTimeout default. */
#define INFORMER_CACHE_SYNC_TIMEOUT_DEFAULT 120.0

/* Run until SIGTERM/SIGINT (then drain in-flight items within the grace period).
 * Returns the exit code. */
int informer_run(const informer_config_t *cfg);

#endif
