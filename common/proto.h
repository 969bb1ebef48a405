/* proto: the messages the daemons exchange over ZeroMQ.
 *
 * Every message is a multipart rmsg; frame 0 names the message. Numbers travel as
 * decimal text, objects as JSON text. A peer that receives a message it does not know,
 * or one with missing or malformed frames, logs it, counts it in
 * rdc_protocol_errors_total{socket} and drops it: bad input is never fatal.
 *
 * deltas (informerd PUB, the Clone pattern of the ZeroMQ guide)
 *   DELTA seq type kind key resourceVersion object
 *     seq: strictly increasing per informerd process; type: ADDED | MODIFIED | DELETED;
 *     kind: RedisCluster | ConfigMap | Service | StatefulSet | PodDisruptionBudget | Pod | Secret;
 *     key: namespace/name (a Secret's object is its metadata only: PartialObjectMetadata)
 *     (a Pod's key is its own; its RedisCluster is its app.kubernetes.io/instance label);
 *     object: the cached object (for DELETED, the last known state).
 *   HUGZ seq            heartbeat once a second when idle (seq = last published)
 * snapshot (informerd ROUTER, same process)
 *   request:  ICANHAZ
 *   replies:  SNAP seq kind key resourceVersion object   (one per cached object)
 *             KTHXBAI seq                                 (seq of the snapshot)
 *   A late subscriber connects SUB first, then asks for a snapshot, applies it, and from
 *   then on applies only deltas with seq greater than the snapshot's.
 *
 * work (informerd ROUTER; each workerd is a DEALER whose identity is "w-<pid>")
 *   worker -> informerd:
 *     READY [capacity]                   give me keys, up to capacity at once (default 1)
 *     DONE key result after_ms [rv [quiet|act [earlier_rv...] [children]]]
 *                                        result: done | requeue_after | requeue | error |
 *                                        fenced; also frees the key's place. rv: the
 *                                        RedisCluster's resourceVersion after the
 *                                        reconcile's last write of it (none: it wrote
 *                                        none); informerd hands the key out again only
 *                                        once its cache holds that version, or after
 *                                        OWNWRITE_WAIT_NS (informerd/ownwrite.h).
 *                                        quiet: the plan of the object rv names has
 *                                        nothing to do, so the watch's echoes of rv and
 *                                        of earlier_rv (its writes' before the last, up
 *                                        to 3) queue nothing (informerd/echo.h); act:
 *                                        they queue as any change. rv "" with quiet:
 *                                        the RedisCluster was not written, its
 *                                        children were. Quiet, a last frame may name
 *                                        the children written: PROTO_DONE_CHILDREN
 *                                        then a line "kind name rv" each (ConfigMap,
 *                                        Service, StatefulSet, PodDisruptionBudget, at
 *                                        the version the API answered): their echoes
 *                                        queue nothing either (echo.h CHILDREN)
 *     HEARTBEAT [capacity]               (capacity again: a worker forgotten meanwhile
 *                                        is known again with it)
 *   informerd -> worker:
 *     WORK key epoch generation rediscluster children valid_until_mono_ms
 *       epoch: the leader epoch this item was dispatched under (see leader);
 *       valid_until_mono_ms: CLOCK_MONOTONIC ms (same host) after which the worker must
 *       not write for this item (its lease): informerd may take the key back after its
 *       reconcile timeout (counted from the worker's last word or its oldest item) and
 *       hand it to another worker, PROTO_LEASE_MARGIN_MS later at the earliest; a worker
 *       stopped or stuck past it stops (docs/simulation.md, finding 3). Absent: no lease;
 *       rediscluster: the cached RedisCluster JSON; children: a JSON object
 *       {"ConfigMap": obj|null, "Service": obj|null, "StatefulSet": obj|null,
 *        "PodDisruptionBudget": obj|null, "Pods": [pod, ...], "Redis": observation|null}
 *       Pods are the cluster's pods in compact form (metadata, spec.nodeName,
 *       status.podIP/phase/conditions); Redis is the latest OBSERVED observation.
 *     HEARTBEAT
 *   Heartbeats go both ways every PROTO_HEARTBEAT_MS; a peer silent for
 *   PROTO_LIVENESS heartbeats is dead (Paranoid Pirate): informerd puts a dead worker's
 *   item back on the queue, a worker reconnects with backoff 1 s doubling to 32 s.
 *
 * leader (electord PUB, republished every retry period and on every change)
 *   LEADER is_leader holder transitions epoch valid_until_mono_ms
 *     valid_until_mono_ms: CLOCK_MONOTONIC ms (same host) after which the holder must not
 *     write unless a newer LEADER message extends it; 0 when not leading.
 *
 * observe (informerd PULL; observerd PUSH)
 *   OBSERVED key observation
 *     key: namespace/name of the RedisCluster; observation: JSON
 *     {"observedAt": RFC 3339 wall time, "nodes": [{"pod","ip","reachable","role",
 *      "masterHost","masterPort","linkUp","offset","lastOkAgoMs","downSinceMs",
 *      "linkDownSinceMs","probedAgoMs","masterIoAgoMs","keys"[,"cluster"]}]}
 *     role: "master" | "slave" | "" (unknown); downSinceMs: 0 when reachable;
 *     probedAgoMs: since the node's last probe began (answered or not), -1 never probed;
 *     masterIoAgoMs: a replica with its link up heard from its primary at most this long
 *     ago (master_last_io_seconds_ago + 1 s + the probe's age), -1 otherwise; keys: of
 *     every database (INFO keyspace), -1 unknown.
 *     cluster (spec.mode Cluster, once the node answered CLUSTER NODES / INFO):
 *     {"nodes" (normalized CLUSTER NODES) or "error", "state", "slotsAssigned",
 *      "slotsOk","slotsPfail","slotsFail","knownNodes","currentEpoch"} (observerd/obsdiff.h).
 *     Sent when a node's reachability, role, master host/port or link, its cluster
 *     nodes text, state or slot counts, or the set of nodes, changes (offsets alone
 *     never), and every second while a primary is unreachable. informerd keeps the
 *     latest per key (not a delta kind), hands it to the worker as children "Redis",
 *     and adds the key to the queue. At most PROTO_MAX_OBSERVATION_BYTES.
 *
 * hint (observerd PULL; each workerd PUSH, ZMQ_DONTWAIT: a hint nobody takes is dropped)
 *   HOT key for_ms
 *     key: namespace/name of the RedisCluster; for_ms: decimal, 0..: the worker that
 *     just reconciled key is acting on its Redis (a rollout step, a switchover, a
 *     repoint, a failover under way): probe its pods every OBSERVE_HOT_INTERVAL_MS
 *     (observerd/cadence.h) for the next for_ms (at most PROTO_HOT_MAX_MS), instead of
 *     every second; 0: the step is done, back to every second now. Each HOT replaces
 *     the last for its key (one worker holds a key at a time), and a hot cluster turns
 *     cold by itself when for_ms has passed, so a worker that dies leaves none hot.
 *
 * events (supervisor PUB)
 *   EXITED name pid signal code   a child exited (signal 0 = it exited with code);
 *                                 informerd hands a dead worker's item back at once
 *                                 instead of waiting for its heartbeats to stop
 *
 * control (supervisor ROUTER; `supervisor ctl` is a DEALER or REQ)
 *   STATUS               -> STATUS json   (an array, one object per child: child, pid,
 *                                          state, ready, uptime_s, restarts, last_exit,
 *                                          keys [{key, age_s}] every key a worker holds,
 *                                          from its key file (common/keyfile.h), and
 *                                          key (the first, "" when none))
 *   WORKERS n            -> OK | ERROR message
 *   SHUTDOWN             -> OK
 */
#ifndef RDC_PROTO_H
#define RDC_PROTO_H

#include "rmsg.h"

#include <stdint.h>

#define PROTO_DELTA "DELTA"
#define PROTO_HUGZ "HUGZ"
#define PROTO_ICANHAZ "ICANHAZ"
#define PROTO_SNAP "SNAP"
#define PROTO_KTHXBAI "KTHXBAI"
#define PROTO_READY "READY"
#define PROTO_DONE "DONE"
#define PROTO_DONE_CHILDREN "children" /* a DONE frame: "children\n" then "kind name rv\n" each */
#define PROTO_WORK "WORK"
#define PROTO_HEARTBEAT "HEARTBEAT"
#define PROTO_LEADER "LEADER"
#define PROTO_STATUS "STATUS"
#define PROTO_WORKERS "WORKERS"
#define PROTO_SHUTDOWN "SHUTDOWN"
#define PROTO_EXITED "EXITED"
#define PROTO_OBSERVED "OBSERVED"
#define PROTO_HOT "HOT"
#define PROTO_OK "OK"
#define PROTO_ERROR "ERROR"

#define PROTO_HEARTBEAT_MS 1000
/* How often each daemon writes its metrics file for the supervisor to merge. */
#define PROTO_METRICS_EVERY_MS 2000
#define PROTO_LIVENESS 3
/* WORK's lease ends this long before informerd may take the key back: the write in
 * flight at the fence ends by the lease (the client's deadline), a Redis command within
 * its own 2 s timeout. */
#define PROTO_LEASE_MARGIN_MS 5000

/* Limits on what a peer may send us; larger messages are dropped (rmsg_recv). */
#define PROTO_MAX_FRAMES 16
#define PROTO_MAX_BYTES ((size_t)16 << 20)

/* Endpoint file names inside the runtime directory (ipc://<dir>/<name>). */
#define PROTO_EP_DELTAS "deltas.sock"
#define PROTO_EP_SNAPSHOT "snapshot.sock"
#define PROTO_EP_WORK "work.sock"
#define PROTO_EP_LEADER "leader.sock"
#define PROTO_EP_CONTROL "control.sock"
#define PROTO_EP_EVENTS "events.sock"
#define PROTO_EP_OBSERVE "observe.sock"
#define PROTO_EP_HINT "hint.sock"

/* An observation larger than this is dropped by informerd: about 200 bytes a node, but
 * in Cluster mode every node carries its CLUSTER NODES text, a line for every node, so
 * n pods take about 130 n^2 bytes: 6 KiB for 3 shards x 1 replica, 195 KiB for 20 x 1,
 * 1.25 MiB for the largest cluster the API allows (100 pods, 20 x 4). */
#define PROTO_MAX_OBSERVATION_BYTES ((size_t)2 << 20)

/* HOT's bounds: a key is namespace/name (at most 253 + 1 + 253 bytes); a longer for_ms
 * is cut to PROTO_HOT_MAX_MS, so that no message keeps a cluster hot for long. */
#define PROTO_HOT_KEY_MAX 512
#define PROTO_HOT_MAX_MS 30000

/* A new HOT message for key (namespace/name) and for_ms (negative counts as 0); the
 * caller sends and destroys it. Aborts when out of memory, as rmsg does. */
rmsg_t *proto_hot_new(const char *key, int64_t for_ms);

/* Read a received HOT message m: 0 with its key copied into key (PROTO_HOT_KEY_MAX
 * bytes) and for_ms (0..PROTO_HOT_MAX_MS, longer ones cut); -1 when it is not a
 * well-formed HOT (not 3 frames, another name, a key that is empty, too long or has no
 * '/', for_ms not a decimal or negative), with *why saying which (a static string), and
 * key and for_ms unchanged. */
int proto_hot_parse(const rmsg_t *m, char key[PROTO_HOT_KEY_MAX], int64_t *for_ms, const char **why);

/* A message on socket ("work", "leader", "events", "snapshot", "control") was unknown,
 * malformed or too large and is dropped: log it once and count it in
 * rdc_protocol_errors_total{socket}. what says which and why. */
void proto_error(const char *socket, const char *what);

#endif
