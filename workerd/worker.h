/* worker: the workerd event loop, a Paranoid Pirate worker of informerd's work queue.
 *
 * A DEALER (identity "w-<pid>") connected to informerd's work ROUTER: it says READY,
 * receives WORK items (key, epoch, generation, the cached RedisCluster and children),
 * and answers DONE key result after_ms for each, which also frees its place. READY and
 * every HEARTBEAT carry max_inflight: informerd gives the worker up to that many keys at
 * once (never one key twice, invariant 1), and the worker reconciles them together on
 * its loop (reconcile.h: reads, plan, writes; executor.h ASYNC), the requests of all its
 * keys and its Events on one curl multi, over TLS one HTTP/2 connection. Heartbeats go
 * both ways every second; when informerd is silent for three of them the worker
 * reconnects with backoff 1 s doubling to 32 s. SIGTERM: the items in
 * flight finish, any new one is handed back ("fenced"), then it exits.
 * Before each DONE of a plan that ran to its end it tells observerd how closely to watch
 * that cluster (HOT key for_ms on a PUSH to <runtime_dir>/hint.sock, proto.h;
 * hothint.h decides), never waiting: a hint observerd does not take is dropped.
 *
 * Fencing: the worker writes for an item only within the item's lease (WORK's
 * valid_until_mono_ms, proto.h: informerd may give the key to another worker after it);
 * with leader election on, it also subscribes to electord's leader stream and writes
 * only while the latest LEADER message says this replica leads, under the same epoch as
 * the work item, and its validity deadline has not passed. A write in flight at the
 * fence ends by the sooner of the two (the client's deadline).
 */
#ifndef RDC_WORKER_H
#define RDC_WORKER_H

#include "kube_client.h"

typedef struct {
    kube_client_t *client;
    const char *runtime_dir;   /* ipc endpoints, metrics and state files */
    const char *name;          /* for metrics/state files: $RDC_CHILD_NAME or "workerd" */
    const char *work_endpoint; /* informerd's work ROUTER */
    const char *leader_endpoint; /* electord's leader PUB; NULL = no leader election */
    int signal_fd;
    int max_inflight;          /* keys reconciled at once, 1..WORKER_MAX_INFLIGHT */
    kube_client_t *events_client; /* the recorder's, with the Events' budget (recorder.h);
                                   * NULL: client */
    const char *operator_namespace; /* the pod's namespace in-cluster (the NetworkPolicy's
                                     * operator peer), NULL: render.h's default */
    const char *operator_image;     /* the restore init container's image (render.h RESTORE),
                                     * NULL: render.h's default */
} worker_config_t;

#define WORKER_MAX_INFLIGHT 16 /* informerd's WORKSLOT_MAX */

/* Run until SIGTERM/SIGINT (after finishing the current item). Returns the exit code. */
int worker_run(const worker_config_t *cfg);

#endif
