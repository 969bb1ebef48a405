/* worker: the workerd event loop, a Paranoid Pirate worker of informerd's work queue.
 *
 * A DEALER (identity "w-<pid>") connected to informerd's work ROUTER: it says READY,
 * receives WORK items (key, epoch, generation, the cached RedisCluster and children),
 * reconciles them one at a time and answers DONE key result after_ms, which also means
 * "ready for the next". Heartbeats go both ways every second while idle; when informerd
 * is silent for three of them the worker reconnects with backoff 1 s doubling to 32 s.
 *
 * Fencing: with leader election on, the worker also subscribes to electord's leader
 * stream and writes only while the latest LEADER message says this replica leads, under
 * the same epoch as the work item, and its validity deadline has not passed.
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
} worker_config_t;

/* Run until SIGTERM/SIGINT (after finishing the current item). Returns the exit code. */
int worker_run(const worker_config_t *cfg);

#endif
