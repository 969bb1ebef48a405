/* informer_internal: what informerd's files share, split along informer.c's old section
 * headers:
 *   informer.c   deltas, objects too large, metrics, setup and the loop's handlers
 *   reflector.c  LIST and WATCH per kind, curl on the loop, informerd's own writes
 *                (Events, the ReconcileCrashed condition) through kube_async
 *   dispatch.c   workers (the work socket, Paranoid Pirate), quarantine, observerd's
 *                observations, snapshots (the Clone pattern)
 * Not for use outside informerd/. */
#ifndef RDC_INFORMER_INTERNAL_H
#define RDC_INFORMER_INTERNAL_H

#include "workslot.h"
#include "informer.h"

#include "backoff.h"
#include "buf.h"
#include "cache.h"
#include "clock.h"
#include "crashcond.h"
#include "daemon.h"
#include "deltapub.h"
#include "event.h"
#include "hashmap.h"
#include "jsonx.h"
#include "kube_async.h"
#include "log.h"
#include "loop.h"
#include "loop_curl.h"
#include "metrics.h"
#include "obsstore.h"
#include "ownwrite.h"
#include "podview.h"
#include "proto.h"
#include "rdc_api.h"
#include "reflector.h"
#include "reporter.h"
#include "secretref.h"
#include "syncgate.h"
#include "toolarge.h"
#include "watch.h"
#include "workitem.h"
#include "workqueue.h"
#include "rmsg.h"

#include <curl/curl.h>
#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#define OWNER_KIND "RedisCluster"
#define MANAGED_BY_SELECTOR "app.kubernetes.io/managed-by=rediscluster-operator"
/* A Pod's controller is its StatefulSet; this label names its RedisCluster. */
#define POD_OWNER_LABEL "app.kubernetes.io/instance"
#define NREFLECTORS 7
#define MAX_WORKERS 128
#define QUARANTINE_NS (INT64_C(3600) * NS_PER_SEC)
#define CRASHES_TO_QUARANTINE 3
#define OWNWRITE_MAX_KEYS 65536 /* keys awaiting their own write at once (ownwrite.h) */

typedef struct informer informer_t;

typedef struct {
    char id[64];                /* routing id, "w-<pid>" */
    size_t idlen;
    workslot_t held;            /* the keys in flight there, up to its capacity (workslot.h) */
    int64_t last_heard_ns;
} worker_slot_t;

struct informer {
    const informer_config_t *cfg;
    cache_t *cache;
    workqueue_t *queue;
    reflector_t *refl[NREFLECTORS];
    size_t nrefl;
    CURLM *multi;
    loop_t *loop;
    loop_curl_t *lc;            /* drives multi on loop */
    reporter_t *reporter;       /* informerd's own writes: Events, the ReconcileCrashed condition */
    int exit_code;              /* what informer_run returns once the loop ends */
    deltapub_t *deltas;         /* the delta stream, its snapshots, --tail */
    void *zctx, *work, *leader_sub, *events_sub, *observe;
    obsstore_t *observations;   /* observerd's latest per RedisCluster key */
    secretref_t *secretrefs;    /* Secret ns/name -> the RedisClusters whose spec.auth names it */
    ownwrite_t *ownwrites;      /* keys held back until their own last write is cached */
    worker_slot_t workers[MAX_WORKERS];
    size_t nworkers;
    int is_leader;
    int64_t epoch;
    int64_t valid_until_ms;
    int64_t next_resync_ns;
    int stopping;
    int64_t stop_deadline_ns;
    int ready_sent;             /* every reflector has synced once: dispatch may start */
    int64_t started_ns;
    metric_family_t *m_quarantined, *m_observations, *m_ownwrites;
};

int may_dispatch(const informer_t *inf);
void dispatch(informer_t *inf, int64_t now);
void handle_events(informer_t *inf, int64_t now);
void handle_leader(informer_t *inf);
void handle_observe(informer_t *inf, int64_t now);
void handle_work_socket(informer_t *inf, int64_t now);
void heartbeat_workers(informer_t *inf, int64_t now);
int64_t write_fence(const informer_t *inf);

#endif
