/* dispatcher: the work queue, the workers, observations, quarantine, leadership. See
 * dispatcher.h. */
#include "dispatcher.h"

#include "buf.h"
#include "clock.h"
#include "crashcond.h"
#include "echo.h"
#include "jsonx.h"
#include "log.h"
#include "metrics.h"
#include "obsstore.h"
#include "ownwrite.h"
#include "projection.h"
#include "proto.h"
#include "rdc_api.h"
#include "rmsg.h"
#include "secretref.h"
#include "toolarge.h"
#include "workitem.h"
#include "workqueue.h"
#include "workslot.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#define MAX_WORKERS 128

/* Why a key was added to the queue: informer_queue_adds_total{cause,result}, with what
 * each add became (workqueue_on_outcome). 0 is abandon()'s backoff. */
typedef enum {
    CAUSE_CRASH = 0,         /* its worker died or went silent with it */
    CAUSE_GIVEN_BACK,        /* given back unreconciled (worker gone or exited, runs alone later) */
    CAUSE_RC,                /* the RedisCluster's ADDED or MODIFIED, not an own echo */
    CAUSE_RC_IN_FLIGHT,      /* its MODIFIED that came in flight, judged no echo at DONE */
    CAUSE_OWN_ECHO,          /* the echo of its own write that ended a wait holding it back */
    CAUSE_OWN_WRITE_EXPIRED, /* that wait ended without the echo */
    CAUSE_RESYNC,            /* the periodic resync */
    CAUSE_OBSERVATION,       /* observerd's OBSERVED */
    CAUSE_SECRET,            /* a Secret its spec names */
    CAUSE_REQUEUE,           /* its reconcile's requeue_after */
    CAUSE_FENCED,            /* its reconcile was fenced (the lease) */
    CAUSE_ERROR,             /* its reconcile failed, or its item could not be built: backoff */
    CAUSE_POD_SCHEDULING,    /* a young pod's PodScheduled alone changed: for when it is read */
    CAUSE_CHILD              /* a child's delta: one cause per kind of child_kinds from here */
} cause_t;

/* The children whose deltas are told apart, in order from CAUSE_CHILD; any other kind is
 * the cause after them, "child_other". */
static const char *const child_kinds[] = {
    "Pod", "StatefulSet", "ConfigMap", "Service", "PodDisruptionBudget", "NetworkPolicy", "RedisBackup", "Job",
    "BackupPod",
};
#define NCHILD_KINDS (sizeof(child_kinds) / sizeof(child_kinds[0]))
#define NCAUSES (CAUSE_CHILD + NCHILD_KINDS + 1)

static const char *const cause_names[NCAUSES] = {
    "crash", "given_back", "rediscluster", "rediscluster_in_flight", "own_write_echo", "own_write_expired", "resync",
    "observation", "secret", "requeue", "fenced", "error", "pod_scheduling",
    /* the children's, as child_kinds */
    "pod", "statefulset", "configmap", "service", "poddisruptionbudget", "networkpolicy", "redisbackup", "job",
    "backuppod", "child_other",
};
_Static_assert(NCAUSES <= WORKQUEUE_CAUSES_MAX, "the queue keeps every cause");

/* What an add became, as the result label says it (workqueue_outcome_t's order). */
static const char *const outcome_names[] = {"queued", "merged", "dropped"};

/* The cause of a delta of a child of kind. */
static unsigned child_cause(const char *kind)
{
    size_t i = 0;
    while (i < NCHILD_KINDS && strcmp(child_kinds[i], kind) != 0)
        i++;
    return CAUSE_CHILD + (unsigned)i;
}
#define OWNWRITE_MAX_KEYS 65536 /* keys awaiting their own write at once (ownwrite.h) */

/* One worker, by its routing id on the work socket. */
typedef struct {
    char id[64];                /* routing id, "w-<pid>" */
    size_t idlen;
    workslot_t held;            /* the keys in flight there, up to its capacity (workslot.h) */
    int64_t last_heard_ns;
} worker_slot_t;

/* A socket of the dispatcher's on the loop: each message it reads goes to fn. */
typedef struct {
    dispatcher_t *d;
    void *socket;
    size_t max_bytes;           /* a longer message is dropped (rmsg_recv) */
    void (*fn)(dispatcher_t *d, rmsg_t *m, int64_t now);
} reader_t;

struct dispatcher {
    dispatcher_config_t cfg;
    dispatcher_sockets_t socks;
    loop_t *loop;               /* attached to, or NULL */
    reader_t readers[4];        /* the sockets it reads, once attached */
    size_t nreaders;
    int heartbeat_timer;
    workqueue_t *queue;
    obsstore_t *observations;   /* observerd's latest per RedisCluster key */
    secretref_t *secretrefs;    /* Secret ns/name -> the RedisClusters that name it (auth, tls, acl) */
    ownwrite_t *ownwrites;      /* keys held back until their own last write is cached */
    echo_t *echoes;             /* the RedisCluster's changes that echo its own writes */
    worker_slot_t workers[MAX_WORKERS];
    size_t nworkers;
    int is_leader;              /* electord's latest word */
    int64_t epoch;
    int64_t valid_until_ms;
    int draining;
    metric_family_t *m_quarantined, *m_observations, *m_ownwrites, *m_skipped, *m_echoes, *m_adds;
};

/* The queue says what an add of cause became: counted. */
static void on_outcome(void *arg, unsigned cause, workqueue_outcome_t outcome)
{
    dispatcher_t *d = arg;
    metric_counter_add(d->m_adds, METRIC_LABELS(cause_names[cause], outcome_names[outcome]), 1);
}

/* Queue key for cause, as how says (workqueue_put). */
static void queue_for(dispatcher_t *d, const char *key, workqueue_how_t how, int64_t delay_ns, cause_t cause,
                      int64_t now)
{
    workqueue_put(d->queue, key, how, delay_ns, cause, now);
}

/* ---- leadership ----------------------------------------------------------------------- */

/* Leading with a valid lease (or no election) and not draining. */
static int may_dispatch(const dispatcher_t *d)
{
    if (d->draining)
        return 0;
    if (!d->cfg.leader_elect)
        return 1;
    return d->is_leader && clock_mono_ns() / NS_PER_MS < d->valid_until_ms;
}

/* When the writes made now must end: the lease's validity (INT64_MAX: no election). */
static int64_t write_fence(const dispatcher_t *d)
{
    return d->cfg.leader_elect ? d->valid_until_ms * NS_PER_MS : INT64_MAX;
}

int dispatcher_may_write(const dispatcher_t *d, int64_t *fence_ns)
{
    if (fence_ns)
        *fence_ns = write_fence(d);
    return may_dispatch(d);
}

/* ---- quarantine report ---------------------------------------------------------------- */

/* After a reconcile of key that did not crash: turn a True ReconcileCrashed condition
 * False. */
static void crashcond_clear(dispatcher_t *d, const char *key)
{
    if (may_dispatch(d))
        reporter_reconcile_completed(d->cfg.reporter, key, write_fence(d));
}

/* Tell the user on the object itself: a Warning Event and a ReconcileCrashed condition.
 * Both are written on the loop (no wait here); failures are logged, not retried. */
static void quarantine_report(dispatcher_t *d, const char *key)
{
    rlog_error("key quarantined: it crashed workers repeatedly", "key", key);
    if (may_dispatch(d))
        reporter_quarantined(d->cfg.reporter, key, DISPATCHER_CRASHES_TO_QUARANTINE, write_fence(d));
}

/* ---- workers ------------------------------------------------------------------------ */

static worker_slot_t *worker_find(dispatcher_t *d, const char *id, size_t len)
{
    for (size_t i = 0; i < d->nworkers; i++) {
        if (d->workers[i].idlen == len && memcmp(d->workers[i].id, id, len) == 0)
            return &d->workers[i];
    }
    return NULL;
}

static void worker_forget(dispatcher_t *d, worker_slot_t *w)
{
    *w = d->workers[--d->nworkers];
}

/* Give key back to the queue: counted as a crash of the key (crash 1) or not. */
static void give_back(dispatcher_t *d, worker_slot_t *w, const char *key, const char *why, int crash, int64_t now)
{
    echo_forget(d->echoes, key); /* what came in flight is read by the reconcile queued here */
    if (!crash) {
        workqueue_done(d->queue, key, now);
        queue_for(d, key, WORKQUEUE_NOW, 0, CAUSE_GIVEN_BACK, now);
        return;
    }
    workqueue_abandon(d->queue, key, now);
    unsigned crashes = workqueue_crash_count(d->queue, key);
    char n[16];
    snprintf(n, sizeof(n), "%u", crashes);
    rlog_warn("worker lost with an item in flight; requeued", "worker", w->id, "key", key, "reason", why,
              "crashes", n);
    if (crashes >= DISPATCHER_CRASHES_TO_QUARANTINE) {
        workqueue_quarantine(d->queue, key, now + DISPATCHER_QUARANTINE_NS);
        metric_counter_add(d->m_quarantined, NULL, 1);
        quarantine_report(d, key);
    }
}

/* Every key the worker holds goes back to the queue (each counted as a crash of that key
 * when crash), and the worker is forgotten. */
static void worker_release_all(dispatcher_t *d, worker_slot_t *w, const char *why, int crash, int64_t now)
{
    while (w->held.n) {
        char key[WORKSLOT_KEY_MAX];
        snprintf(key, sizeof(key), "%s", w->held.key[w->held.n - 1]);
        workslot_release(&w->held, key);
        give_back(d, w, key, why, crash, now);
    }
    worker_forget(d, w);
}

/* The worker died or went silent with items: requeue each and count a crash of each. */
static void worker_lost(dispatcher_t *d, worker_slot_t *w, const char *why, int64_t now)
{
    worker_release_all(d, w, why, 1, now);
}

/* The lease of an item handed to w now (proto.h, WORK valid_until_mono_ms): the worker
 * writes nothing for it after this moment, since on_heartbeat may take w's keys back
 * after the reconcile timeout from w's last word or from its oldest item's hand-out,
 * whichever came first, and give them to another worker. PROTO_LEASE_MARGIN_MS short of
 * that (half the timeout when it is shorter): room for the write in flight at the fence
 * (bounded by it) and a Redis command's timeout. In ns of the monotonic clock. */
static int64_t item_lease_ns(const dispatcher_t *d, const worker_slot_t *w)
{
    int64_t timeout = (int64_t)(d->cfg.reconcile_timeout_s * 1e9), from = workslot_oldest(&w->held);
    int64_t margin = (int64_t)PROTO_LEASE_MARGIN_MS * NS_PER_MS;
    if (w->last_heard_ns < from || !from)
        from = w->last_heard_ns;
    return from + timeout - (margin < timeout / 2 ? margin : timeout / 2);
}

/* Returns 0 when the worker got key, -1 when the key went back to the queue, 1 when
 * the worker is gone (and forgotten: w's place holds another worker now). */
static int send_work(dispatcher_t *d, worker_slot_t *w, const char *key, int64_t now)
{
    /* next_key() checked that the owner is cached. The children go as one JSON object
     * spliced from the cache's text (workitem.h). */
    const cache_item_t *rc = cache_lookup(d->cfg.cache, RDC_KIND, key);
    buf_t children;
    buf_init(&children, 0);
    size_t obslen = 0;
    const char *obs = obsstore_get(d->observations, key, &obslen);
    int bad = workitem_children(d->cfg.cache, key, obs, obslen, &children);
    int alone = workqueue_crash_count(d->queue, key) > 0;
    if (bad || workslot_hold(&w->held, key, now, alone)) {
        /* Out of memory (or a key too long to hold): the key waits and comes back, it is
         * not lost. */
        buf_free(&children);
        rlog_error("cannot build the work item; retrying later", "key", key);
        workqueue_done(d->queue, key, now);
        queue_for(d, key, WORKQUEUE_RATE_LIMITED, 0, CAUSE_ERROR, now);
        return -1;
    }
    rmsg_t *m = rmsg_new();
    rmsg_addmem(m, w->id, w->idlen);
    rmsg_addstr(m, PROTO_WORK);
    rmsg_addstr(m, key);
    rmsg_addf(m, "%lld", (long long)d->epoch);
    rmsg_addf(m, "%lld", (long long)(rc ? rc->generation : 0));
    rmsg_addmem(m, rc ? rc->json : "null", rc ? rc->json_len : 4);
    rmsg_addmem(m, buf_str(&children), children.len);
    rmsg_addf(m, "%lld", (long long)(item_lease_ns(d, w) / NS_PER_MS));
    buf_free(&children);
    echo_flight_begin(d->echoes, key, rc ? rc->resource_version : NULL);
    if (rmsg_send(&m, d->socks.work, ZMQ_DONTWAIT)) {
        /* The worker is gone (ROUTER_MANDATORY): give its keys back untouched (this one
         * too: it never got it). */
        worker_release_all(d, w, "unreachable", 0, now);
        return 1;
    }
    return 0;
}

/* ---- dispatch ----------------------------------------------------------------------------- */

/* The next key to hand out, or NULL when none is ready. */
static const char *next_key(dispatcher_t *d, int64_t now)
{
    for (;;) {
        const char *key = workqueue_get(d->queue, now);
        if (!key)
            return NULL;
        const cache_item_t *rc = cache_lookup(d->cfg.cache, RDC_KIND, key);
        const cache_item_t *big = rc ? toolarge_blocker(d->cfg.cache, rc) : NULL;
        if (rc && !big && ownwrite_may_dispatch(d->ownwrites, key, now))
            return key;
        if (rc && !big) {
            /* Its last reconcile wrote the RedisCluster, and the cache does not hold that
             * yet: it waits for the delta that brings it (which queues it) or the end of
             * the wait (ownwrite.h). */
            workqueue_done(d->queue, key, now);
            continue;
        }
        /* Deleted meanwhile: nothing to reconcile. Or it, or a child, is kept in minimal
         * form: a worker would take the missing spec or data for a change to make. It
         * waits for a smaller object (a delta) or its deletion. */
        if (big)
            rlog_info("not reconciled: an object is too large (see its Warning Event)", "key", key, "kind",
                      big->kind, "object", big->key);
        workqueue_forget(d->queue, key);
        workqueue_done(d->queue, key, now);
    }
}

void dispatcher_dispatch(dispatcher_t *d, int64_t now)
{
    if (!d->socks.work || !may_dispatch(d))
        return;
    /* Round robin, one key per worker with room per pass: C keys to the first worker
     * before the second gets one would leave the others idle while it works. */
    for (int more = 1; more;) {
        more = 0;
        for (size_t i = 0; i < d->nworkers;) {
            worker_slot_t *w = &d->workers[i];
            if (!workslot_room(&w->held)) {
                i++;
                continue;
            }
            const char *key = next_key(d, now);
            if (!key)
                return;
            char k[WORKSLOT_KEY_MAX];
            snprintf(k, sizeof(k), "%s", key);
            if (workqueue_crash_count(d->queue, k) > 0 && w->held.n) {
                /* It crashed a worker: it runs alone, in a worker that holds nothing. */
                worker_slot_t *idle = NULL;
                for (size_t j = 0; j < d->nworkers && !idle; j++)
                    if (!d->workers[j].held.n)
                        idle = &d->workers[j];
                if (!idle) {
                    /* none yet: it goes back to the queue and dispatch pauses for this
                     * turn, so the workers drain until one is empty (under a constant
                     * flow of keys it may wait several turns) */
                    workqueue_done(d->queue, k, now);
                    queue_for(d, k, WORKQUEUE_NOW, 0, CAUSE_GIVEN_BACK, now);
                    return;
                }
                if (send_work(d, idle, k, now) == 1)
                    more = 1;
                continue;
            }
            int sent = send_work(d, w, k, now);
            if (sent == 1)
                continue; /* place i now holds another worker: look at it */
            if (sent == 0 && workslot_room(&w->held))
                more = 1;
            i++;
        }
    }
}

/* ---- the work socket (Paranoid Pirate) -------------------------------------------------- */

/* The versions a DONE names (frame 4 the last write's, "" when it wrote none, frame 5
 * "quiet" or "act", then the earlier writes') into rvs (at most max, each freed by the
 * caller); how many. *quiet: the worker says the object its last write left needs no
 * reconcile (echo.h). A PROTO_DONE_CHILDREN frame is no version. */
static size_t done_writes(rmsg_t *m, char **rvs, size_t max, int *quiet)
{
    size_t n = 0;
    *quiet = rmsg_size(m) > 5 && rmsg_frame_is(m, 5, "quiet");
    for (size_t f = 4; f < rmsg_size(m) && n < max; f++) {
        const char *text = rmsg_frame(m, f, NULL);
        if (f != 5 && strncmp(text, PROTO_DONE_CHILDREN "\n", sizeof(PROTO_DONE_CHILDREN)) &&
            (rvs[n] = rmsg_strdup(m, f)))
            n++;
    }
    return n;
}

/* A DONE's child writes (its PROTO_DONE_CHILDREN frame: "children\n" then a line "kind
 * name rv" each) into out (at most max), pointing into *text, a copy the caller frees
 * (NULL when there is none); how many. A line that is not three words is skipped. */
static size_t done_children(const rmsg_t *m, char **text, echo_child_t *out, size_t max)
{
    size_t n = 0;
    *text = NULL;
    for (size_t f = 6; f < rmsg_size(m) && !*text; f++)
        if (!strncmp(rmsg_frame(m, f, NULL), PROTO_DONE_CHILDREN "\n", sizeof(PROTO_DONE_CHILDREN)))
            *text = rmsg_strdup(m, f);
    for (char *line = *text ? strchr(*text, '\n') : NULL; line && n < max;) {
        char *word[3], *end = strchr(++line, '\n');
        if (end)
            *end = '\0';
        size_t w = 0;
        for (char *p = line; *p && w < 3; w++) {
            word[w] = p;
            p += strcspn(p, " ");
            if (*p)
                *p++ = '\0';
        }
        if (w == 3 && *word[2] && !strchr(word[2], ' '))
            out[n++] = (echo_child_t){word[0], word[1], word[2]};
        line = end;
    }
    return n;
}

/* The children's changes that came while a key was in flight and were no echo (echo.h
 * echo_flight_end): queued once the key is done, each when its child delay ends. */
typedef struct {
    unsigned cause;
    int64_t at;
} later_one_t;

typedef struct {
    later_one_t v[ECHO_DEFER_MAX];
    size_t n;
} later_t;

static void keep_later(void *arg, const char *kind, int64_t at_ns)
{
    later_t *l = arg;
    if (l->n < ECHO_DEFER_MAX)
        l->v[l->n++] = (later_one_t){child_cause(kind), at_ns};
}

/* Queue key for each of l, as its delta would have been: after what is left of the
 * child delay. */
static void queue_later(dispatcher_t *d, const char *key, const later_t *l, int64_t now)
{
    for (size_t i = 0; i < l->n; i++) {
        metric_counter_add(d->m_echoes, METRIC_LABELS("child_deferred_queued"), 1);
        int64_t left = l->v[i].at + d->cfg.child_delay_ns - now;
        queue_for(d, key, WORKQUEUE_SOON, left > 0 ? left : 0, (cause_t)l->v[i].cause, now);
    }
}

/* DONE key result [after] [written [earlier...]]: the key comes back from w. */
static void handle_done(dispatcher_t *d, worker_slot_t *w, rmsg_t *m, int64_t now)
{
    char *key = rmsg_strdup(m, 1);
    char *result = rmsg_strdup(m, 2);
    int64_t after_ms = 0;
    rmsg_frame_int64(m, 3, &after_ms);
    char *writes[1 + ECHO_WRITES_MAX] = {NULL}, *kids_text = NULL;
    int quiet = 0;
    size_t nwrites = done_writes(m, writes, sizeof(writes) / sizeof(writes[0]), &quiet);
    echo_child_t kids[ECHO_CHILD_WRITES_MAX];
    size_t nkids = quiet ? done_children(m, &kids_text, kids, ECHO_CHILD_WRITES_MAX) : 0;
    char *written = writes[0] && *writes[0] ? writes[0] : NULL;
    int changed = 0; /* a change came in flight that was not its own write's echo */
    later_t later = {.n = 0};
    if (!key || !result || workslot_release(&w->held, key) != 0) {
        /* A confused peer (or one we gave up on): the keys it holds stay its own until it
         * answers for them or is lost; nothing is released twice. */
        rlog_warn("DONE for a key the worker does not hold; ignored", "worker", w->id, "key", key ? key : "");
        goto out;
    }
    if (written) {
        /* The key is not handed out again before the cache holds what it wrote. */
        const cache_item_t *rc = cache_lookup(d->cfg.cache, RDC_KIND, key);
        int awaited =
            ownwrite_expect(d->ownwrites, key, written, rc ? rc->resource_version : NULL, now + OWNWRITE_WAIT_NS);
        metric_counter_add(d->m_ownwrites, METRIC_LABELS(awaited ? "awaited" : "cached"), 1);
    }
    /* Echoes of writes whose result the worker did not find quiet queue the key. */
    changed = echo_flight_end(d->echoes, key, (const char *const *)writes, quiet ? nwrites : 0, kids, nkids,
                              keep_later, &later);
    workqueue_done(d->queue, key, now);
    /* The reconcile ran to its end without crashing the worker: a quarantine recorded on
     * the object is over. */
    crashcond_clear(d, key);
    if (strcmp(result, "done") == 0) {
        workqueue_forget(d->queue, key);
    } else if (strcmp(result, "requeue_after") == 0) {
        workqueue_forget(d->queue, key);
        queue_for(d, key, WORKQUEUE_REQUEUE, after_ms * NS_PER_MS, CAUSE_REQUEUE, now);
    } else if (strcmp(result, "fenced") == 0) {
        queue_for(d, key, WORKQUEUE_NOW, 0, CAUSE_FENCED, now);
    } else {
        /* error or conflict: back off per key (client-go's AddRateLimited). */
        queue_for(d, key, WORKQUEUE_RATE_LIMITED, 0, CAUSE_ERROR, now);
    }
    if (changed) {
        metric_counter_add(d->m_echoes, METRIC_LABELS("deferred_queued"), 1);
        queue_for(d, key, WORKQUEUE_NOW, 0, CAUSE_RC_IN_FLIGHT, now);
    }
    queue_later(d, key, &later, now);
out:
    free(key);
    free(result);
    free(kids_text);
    for (size_t i = 0; i < nwrites; i++)
        free(writes[i]);
}

/* The capacity a READY or HEARTBEAT announces in frame 2 (after the routing id and the
 * command), or 1 when it says none (a worker of one key at a time). */
static int64_t announced_capacity(const rmsg_t *m)
{
    int64_t cap = 1;
    if (rmsg_size(m) > 2 && rmsg_frame_int64(m, 2, &cap))
        cap = 1;
    return cap;
}

/* READY, HEARTBEAT or DONE from a worker (frame 0 its routing id). */
static void work_message(dispatcher_t *d, rmsg_t *m, int64_t now)
{
    size_t idlen = 0;
    const char *id = rmsg_frame(m, 0, &idlen);
    worker_slot_t *w = worker_find(d, id, idlen);
    int ready = rmsg_frame_is(m, 1, PROTO_READY);
    if (w && ready && w->held.n) {
        /* it restarted its link while holding items: they are lost with it */
        worker_lost(d, w, "reconnected", now);
        w = NULL;
    }
    if (!w && idlen < sizeof(w->id) && d->nworkers < MAX_WORKERS) {
        w = &d->workers[d->nworkers++];
        memset(w, 0, sizeof(*w));
        memcpy(w->id, id, idlen);
        w->idlen = idlen;
        workslot_init(&w->held, 1);
    }
    if (!w)
        return;
    w->last_heard_ns = now;
    if (ready || rmsg_frame_is(m, 1, PROTO_HEARTBEAT)) {
        workslot_set_capacity(&w->held, announced_capacity(m));
    } else if (rmsg_frame_is(m, 1, PROTO_DONE)) {
        rmsg_t *body = rmsg_pop_frame_msg(m);
        rmsg_destroy(&body);
        handle_done(d, w, m, now);
    } else {
        rlog_warn("unknown message on the work socket; dropped", "worker", w->id);
    }
}

/* Every heartbeat period: the workers' liveness, and a HEARTBEAT to each. */
static int on_heartbeat(loop_t *loop, int id, void *arg)
{
    (void)loop, (void)id;
    dispatcher_t *d = arg;
    int64_t now = clock_mono_ns();
    int64_t timeout = (int64_t)(d->cfg.reconcile_timeout_s * 1e9);
    for (size_t i = 0; i < d->nworkers;) {
        worker_slot_t *w = &d->workers[i];
        int64_t silent = now - w->last_heard_ns;
        int64_t oldest = workslot_oldest(&w->held);
        /* A worker with keys may be silent while it reads or runs a Redis command (a
         * blocking step); one without is dead after PROTO_LIVENESS heartbeats. Each key
         * also has the reconcile timeout from when it was handed out: a worker that keeps
         * one longer is stuck, and all its keys go back. */
        int64_t limit = w->held.n ? timeout : (int64_t)PROTO_LIVENESS * PROTO_HEARTBEAT_MS * NS_PER_MS;
        if (silent > limit || (oldest && now - oldest > timeout)) {
            worker_lost(d, w, w->held.n ? "reconcile timed out" : "silent", now);
            continue; /* the slot now holds another worker */
        }
        /* Busy workers too: a worker measures our silence in wall time, and a reconcile
         * longer than its liveness window would otherwise make it drop the link (and its
         * DONE) and report READY again, which counts as a crash of the key. */
        rmsg_t *m = rmsg_new();
        rmsg_addmem(m, w->id, w->idlen);
        rmsg_addstr(m, PROTO_HEARTBEAT);
        rmsg_send(&m, d->socks.work, ZMQ_DONTWAIT);
        i++;
    }
    return 0;
}

/* ---- the supervisor and electord ------------------------------------------------------- */

/* The supervisor says a child exited (EXITED name pid signal code): a worker's items come
 * back at once. */
static void events_message(dispatcher_t *d, rmsg_t *m, int64_t now)
{
    int64_t pid = 0, sig = 0, code = -1;
    if (!rmsg_frame_is(m, 0, PROTO_EXITED) || rmsg_frame_int64(m, 2, &pid) || rmsg_frame_int64(m, 3, &sig))
        return;
    char id[64];
    int len = snprintf(id, sizeof(id), "w-%lld", (long long)pid);
    worker_slot_t *w = worker_find(d, id, (size_t)len);
    rmsg_frame_int64(m, 4, &code);
    if (w && sig == 0 && code == 0) {
        /* A clean exit (a worker retired by `ctl workers`, or stopping) is no crash: items
         * it never got to go back without counting against their keys. */
        worker_release_all(d, w, "exited", 0, now);
    } else if (w) {
        char why[64];
        snprintf(why, sizeof(why), sig ? "killed by signal %lld" : "exited", (long long)sig);
        worker_lost(d, w, why, now);
    }
}

/* electord's LEADER is_leader holder transitions epoch valid_until_ms. */
static void leader_message(dispatcher_t *d, rmsg_t *m, int64_t now)
{
    (void)now;
    int64_t is_leader, epoch, valid;
    if (!rmsg_frame_is(m, 0, PROTO_LEADER) || rmsg_frame_int64(m, 1, &is_leader) ||
        rmsg_frame_int64(m, 4, &epoch) || rmsg_frame_int64(m, 5, &valid))
        return;
    if ((is_leader != 0) != d->is_leader)
        rlog_info(is_leader ? "leading: dispatching work" : "not leading: work waits");
    d->is_leader = is_leader != 0;
    d->epoch = epoch;
    d->valid_until_ms = valid;
}

/* ---- observations from observerd ------------------------------------------------------ */

/* The len bytes at text parsed, when they are a JSON object with a "nodes" array; else
 * NULL. The caller puts it. */
static json_object *observation_parse(const char *text, size_t len)
{
    json_tokener *tok = json_tokener_new();
    json_object *o = tok ? json_tokener_parse_ex(tok, text, (int)len) : NULL;
    if (o && (json_tokener_get_error(tok) != json_tokener_success ||
              !json_object_is_type(jsonx_get(o, "nodes"), json_type_array))) {
        json_object_put(o);
        o = NULL;
    }
    json_tokener_free(tok);
    return o;
}

/* Whether now, key's new observation, is news to the plan of key's cached RedisCluster
 * against the observation kept (common/projection.h OBSERVATIONS); 1 whenever in doubt
 * (an invalid spec, out of memory). */
static int observation_news(dispatcher_t *d, const char *key, const json_object *now)
{
    json_object *rc = cache_get_parsed(d->cfg.cache, RDC_KIND, key), *was = NULL;
    rdc_field_errors_t *errs = rdc_field_errors_new();
    rdc_spec_t *spec = malloc(sizeof(*spec));
    int news = 1;
    /* The kept observation is parsed only for a plan that reads less than all of it
     * (Replication and Cluster mode, failover's inputs, go straight on). */
    if (rc && errs && spec && !rdc_spec_parse(rc, spec, errs) && !projection_observation_news(spec, NULL, NULL)) {
        size_t oldlen = 0;
        const char *old = obsstore_get(d->observations, key, &oldlen);
        if (!old || (was = observation_parse(old, oldlen)))
            news = projection_observation_news(spec, was, now);
    }
    free(spec);
    rdc_field_errors_destroy(&errs);
    json_object_put(rc);
    json_object_put(was);
    return news;
}

/* OBSERVED key observation: keep it as the key's latest and queue the key, unless its
 * plan reads nothing in it that the kept one did not say (observation_news: a Standalone
 * cluster's nodes appearing reachable). Only for a cached RedisCluster (observerd follows
 * our cache, so anything else is stale). */
static void observe_message(dispatcher_t *d, rmsg_t *m, int64_t now)
{
    size_t len = 0;
    char *key = rmsg_strdup(m, 1);
    const char *text = rmsg_frame(m, 2, &len);
    const char *result = "malformed";
    json_object *parsed = NULL;
    if (!rmsg_frame_is(m, 0, PROTO_OBSERVED) || !key || !text || rmsg_size(m) != 3) {
        proto_error("observe", "malformed OBSERVED");
        goto out;
    }
    if (!(parsed = observation_parse(text, len))) {
        proto_error("observe", "OBSERVED observation is not {\"nodes\":[...]}");
        goto out;
    }
    result = "unknown_key";
    if (!cache_lookup(d->cfg.cache, RDC_KIND, key))
        goto out;
    result = NULL;
    int news = observation_news(d, key, parsed);
    if (obsstore_put(d->observations, key, text, len)) {
        rlog_warn("out of memory keeping an observation", "key", key);
        goto out;
    }
    result = news ? "stored" : "stored_not_read";
    if (news)
        queue_for(d, key, WORKQUEUE_NOW, 0, CAUSE_OBSERVATION, now); /* failover: never delayed */
out:
    if (result)
        metric_counter_add(d->m_observations, METRIC_LABELS(result), 1);
    json_object_put(parsed);
    free(key);
}

/* ---- the sockets' reader ---------------------------------------------------------------- */

/* Every message waiting on the reader's socket, each to its handler (and then freed). */
static int on_reader(loop_t *loop, void *socket, int fd, int revents, void *arg)
{
    (void)loop, (void)socket, (void)fd, (void)revents;
    const reader_t *r = arg;
    int64_t now = clock_mono_ns();
    rmsg_t *m;
    while ((m = rmsg_recv(r->socket, ZMQ_DONTWAIT, PROTO_MAX_FRAMES, r->max_bytes)) != NULL) {
        r->fn(r->d, m, now);
        rmsg_destroy(&m);
    }
    return 0;
}

/* ---- deltas to keys ------------------------------------------------------------------ */

static void enqueue_now(void *ud, const char *key)
{
    dispatcher_t *d = ud;
    queue_for(d, key, WORKQUEUE_NOW, 0, CAUSE_SECRET, clock_mono_ns());
}

/* A Secret changed (added, modified, deleted, or resynced): enqueue the RedisClusters
 * that name it (spec.auth, spec.tls, spec.acl: a password rotation, a renewed
 * certificate, an ACL user's password are taken at once). */
static void secret_changed(dispatcher_t *d, const cache_item_t *it)
{
    size_t n = secretref_each(d->secretrefs, it->key, enqueue_now, d);
    if (n) {
        char count[24];
        snprintf(count, sizeof(count), "%zu", n);
        rlog_info("Secret changed: its RedisClusters enqueued", "secret", it->key, "resourceVersion",
                  it->resource_version ? it->resource_version : "", "clusters", count);
    }
}

/* Keep the Secret index (secretref.h) up to date with a RedisCluster delta. */
static void index_secretref(dispatcher_t *d, const cache_delta_t *delta, const char *key)
{
    if (delta->type == CACHE_DELETED) {
        secretref_forget(d->secretrefs, key);
        return;
    }
    if (!strstr(delta->item->json, "\"secretRef\"")) { /* most clusters: no parse */
        secretref_forget(d->secretrefs, key);
        return;
    }
    json_object *rc = json_tokener_parse(delta->item->json);
    const char *names[SECRETREF_MAX];
    if (secretref_set_all(d->secretrefs, key, names, secretref_of_all(rc, names, SECRETREF_MAX)))
        rlog_warn("cannot index the RedisCluster's Secrets (out of memory)", "key", key);
    json_object_put(rc);
}

/* A quarantine recorded on the RedisCluster rc by an earlier informerd (this one
 * restarted, or another replica led): hold key back for the rest of its window rather
 * than let it crash workers again. */
static void quarantine_restore(dispatcher_t *d, const cache_item_t *rc, const char *key, int64_t now)
{
    if (!strstr(rc->json, "\"" CRASHCOND_TYPE "\"") || workqueue_is_quarantined(d->queue, key))
        return;
    json_object *obj = json_tokener_parse(rc->json);
    int64_t left = crashcond_quarantine_left_ns(obj, clock_wall_ns(), DISPATCHER_QUARANTINE_NS);
    json_object_put(obj);
    if (left > 0 && workqueue_quarantine(d->queue, key, now + left) == 0) {
        char secs[32];
        snprintf(secs, sizeof(secs), "%lld", (long long)(left / NS_PER_SEC));
        rlog_warn("key quarantined by its ReconcileCrashed condition", "key", key, "seconds_left", secs);
    }
}

/* A delta of the RedisCluster at key itself. Returns the cause to queue key for, or -1
 * when the RedisCluster is gone or the change is the echo of the key's own writes
 * (echo.h). */
static int owner_delta(dispatcher_t *d, const cache_delta_t *delta, const char *key, int64_t now)
{
    const cache_item_t *it = delta->item;
    index_secretref(d, delta, key);
    int held = ownwrite_held(d->ownwrites, key);
    if (ownwrite_seen(d->ownwrites, key, delta->type == CACHE_DELETED ? NULL : it->resource_version))
        metric_counter_add(d->m_ownwrites, METRIC_LABELS("seen"), 1);
    else
        held = 0;
    /* (A resync is no change: what a flight remembered stays to be judged at DONE, since
     * a resync does not queue a key in flight.) */
    if (delta->type == CACHE_ADDED || delta->type == CACHE_DELETED)
        echo_forget(d->echoes, key);
    if (delta->type == CACHE_DELETED) {
        obsstore_forget(d->observations, key);
        return -1; /* gone for good: the finalizer already ran; children go with the GC */
    }
    /* A new spec lifts a quarantine: the change may well be the fix. */
    if (delta->type == CACHE_MODIFIED && delta->old_generation != it->generation)
        workqueue_unquarantine(d->queue, key);
    if (delta->type == CACHE_ADDED)
        quarantine_restore(d, it, key, now);
    if (delta->type == CACHE_MODIFIED) {
        echo_answer_t a = echo_delta(d->echoes, key, delta->old_resource_version, it->resource_version);
        /* An echo that ends a wait which held the key back (ownwrite.h) queues it all the
         * same: the key was taken off the queue for this very version. */
        if (a == ECHO_DEFER || (a == ECHO_OWN && !held)) {
            metric_counter_add(d->m_echoes, METRIC_LABELS(a == ECHO_OWN ? "own" : "deferred"), 1);
            return -1;
        }
        if (a == ECHO_OWN)
            return CAUSE_OWN_ECHO;
    }
    return delta->type == CACHE_SYNC ? CAUSE_RESYNC : CAUSE_RC;
}

/* How long until a change of its LATE rows alone is read (projection.h PROJ_LATE: it is
 * PROJ_LATE_AFTER_NS old), when that is longer than the child delay; else 0 (queued as
 * any child change: its age unknown, or old enough). */
static int64_t late_wait_ns(const dispatcher_t *d, const cache_item_t *it)
{
    json_object *o = strstr(it->json, "\"creationTimestamp\"") ? json_tokener_parse(it->json) : NULL;
    const char *created = JSONX_STR_AT(o, "metadata", "creationTimestamp");
    int64_t at = 0, wait = 0;
    if (created && !clock_parse_rfc3339(created, &at))
        wait = at + PROJ_LATE_AFTER_NS - clock_wall_ns();
    json_object_put(o);
    return wait > d->cfg.child_delay_ns ? wait : 0;
}

/* The children a worker may name as its writes (DONE, echo.h CHILDREN). */
static const char *const echoed_kinds[] = {"ConfigMap", "Service", "StatefulSet", "PodDisruptionBudget"};

/* A child's ADDED or MODIFIED that is the echo of a quiet reconcile's write of it, or that
 * came while key is in flight (judged at DONE): 1, the caller queues nothing now; else 0. */
static int child_echo(dispatcher_t *d, const cache_delta_t *delta, const char *key, int64_t now)
{
    const cache_item_t *it = delta->item;
    const char *name = strchr(it->key, '/');
    size_t i = 0;
    while (i < sizeof(echoed_kinds) / sizeof(echoed_kinds[0]) && strcmp(echoed_kinds[i], it->kind))
        i++;
    if (i == sizeof(echoed_kinds) / sizeof(echoed_kinds[0]) || !name ||
        (delta->type != CACHE_ADDED && delta->type != CACHE_MODIFIED))
        return 0;
    echo_answer_t a = echo_child_delta(d->echoes, key, it->kind, name + 1, it->resource_version, now);
    if (a != ECHO_QUEUE)
        metric_counter_add(d->m_echoes, METRIC_LABELS(a == ECHO_OWN ? "child_own" : "child_deferred"), 1);
    return a != ECHO_QUEUE;
}

void dispatcher_on_delta(dispatcher_t *d, const cache_delta_t *delta)
{
    const cache_item_t *it = delta->item;
    if (!strcmp(it->kind, "Secret")) {
        secret_changed(d, it);
        return;
    }
    if (delta->type == CACHE_MODIFIED && delta->unread_only) {
        /* Only what no plan reads changed (projection.h): the reconcile would find what
         * the last one found. Published all the same (observerd, --tail). */
        metric_counter_add(d->m_skipped, METRIC_LABELS(it->kind), 1);
        return;
    }
    char key[512];
    int rc = cache_item_owner_key(d->cfg.cache, it, key, sizeof(key));
    if (rc != 0 || !key[0])
        return;
    int64_t now = clock_mono_ns();
    if (strcmp(it->kind, RDC_KIND) == 0) {
        int cause = owner_delta(d, delta, key, now);
        if (cause == CAUSE_RESYNC) {
            /* No change: a reconcile already coming (a not-Running cluster's requeue, a
             * child's burst) is the resync's, and a resync no longer lines every key's
             * requeue up into one burst. */
            queue_for(d, key, WORKQUEUE_UNLESS_COMING, d->cfg.resync_merge_ns, CAUSE_RESYNC, now);
        } else if (cause >= 0) {
            queue_for(d, key, WORKQUEUE_NOW, 0, (cause_t)cause, now);
        }
        return;
    }
    if (child_echo(d, delta, key, now))
        return;
    int64_t late = delta->late_only ? late_wait_ns(d, it) : 0;
    if (late > 0) {
        /* Only what is read once the pod is older changed (a young pod's PodScheduled,
         * projection.h PROJ_LATE): it waits until then, and is dropped when the key is
         * handed out first (that reconcile reads it; a cluster with a pod not scheduled
         * is not Running, and each of its reconciles asks to look again). */
        queue_for(d, key, WORKQUEUE_SOON, late, CAUSE_POD_SCHEDULING, now);
        return;
    }
    /* A child's: its burst (the pod, then its StatefulSet's status) is one reconcile. */
    queue_for(d, key, WORKQUEUE_SOON, d->cfg.child_delay_ns, child_cause(it->kind), now);
}

/* ---- the dispatcher ----------------------------------------------------------------------- */

static void close_sockets(dispatcher_sockets_t *socks)
{
    void *all[] = {socks->work, socks->observe, socks->events, socks->leader};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        if (all[i])
            zmq_close(all[i]);
    memset(socks, 0, sizeof(*socks));
}

dispatcher_t *dispatcher_new(const dispatcher_config_t *cfg, dispatcher_sockets_t *socks)
{
    dispatcher_t *d = calloc(1, sizeof(*d));
    if (!d) {
        close_sockets(socks);
        return NULL;
    }
    d->cfg = *cfg;
    d->socks = *socks;
    memset(socks, 0, sizeof(*socks));
    metrics_registry_t *reg = metrics_default();
    d->queue = workqueue_new("rediscluster", reg);
    d->observations = obsstore_new();
    d->secretrefs = secretref_new();
    d->ownwrites = ownwrite_new(OWNWRITE_MAX_KEYS);
    d->echoes = echo_new(OWNWRITE_MAX_KEYS);
    d->m_quarantined = metrics_counter(reg, "informer_quarantined_keys_total",
                                       "Keys quarantined after crashing workers repeatedly.", "");
    d->m_observations = metrics_counter(reg, "informer_observations_total",
                                        "OBSERVED messages from observerd by result (stored; stored_not_read: "
                                        "kept, nothing its plan reads changed, not queued; unknown_key; "
                                        "malformed).",
                                        "result");
    d->m_ownwrites = metrics_counter(
        reg, "informer_own_write_waits_total",
        "Keys awaiting the RedisCluster version their last reconcile wrote, by how the wait began or ended: awaited, "
        "cached (no wait: the cache held it when the worker said it), seen, expired (handed out after waiting in "
        "vain).",
        "result");
    d->m_skipped = metrics_counter(
        reg, "informer_enqueue_skipped_total",
        "Changes of a child that did not queue its RedisCluster, by kind: only fields no plan reads changed "
        "(docs/projections.md).",
        "kind");
    d->m_echoes = metrics_counter(
        reg, "informer_own_echoes_total",
        "Changes of a RedisCluster that queued nothing, being the watch's echo of its own reconcile's writes "
        "(informerd/echo.h): own (came after the reconcile answered: dropped), deferred (came while it ran: "
        "judged when it answers), deferred_queued (of those, a reconcile's worth that was not its own echo); and "
        "of its children (a ConfigMap, Service, StatefulSet or budget a quiet reconcile wrote): child_own, "
        "child_deferred, child_deferred_queued (each change that came while it ran and was no echo).",
        "result");
    d->m_adds = metrics_counter(
        reg, "informer_queue_adds_total",
        "Adds to the work queue by cause (a watch event by kind, an observation, a requeue...) and by what each "
        "became: queued (the key made due: a reconcile), merged (into a key already due or waiting sooner), dropped "
        "(a reconcile handed out before its delay ended read it).",
        "cause,result");
    if (d->queue)
        workqueue_on_outcome(d->queue, on_outcome, d);
    if (!d->queue || !d->observations || !d->secretrefs || !d->ownwrites || !d->echoes)
        dispatcher_destroy(&d);
    return d;
}

int dispatcher_attach(dispatcher_t *d, loop_t *loop)
{
    const dispatcher_sockets_t *s = &d->socks;
    const reader_t all[] = {
        {d, s->leader, 4096, leader_message},
        {d, s->events, 4096, events_message},
        {d, s->work, 1 << 20, work_message},
        {d, s->observe, PROTO_MAX_OBSERVATION_BYTES + 1024, observe_message},
    };
    d->loop = loop;
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        if (!all[i].socket)
            continue;
        d->readers[d->nreaders] = all[i];
        if (loop_add_socket(loop, all[i].socket, LOOP_IN, on_reader, &d->readers[d->nreaders]))
            return -1;
        d->nreaders++;
    }
    if (s->work)
        d->heartbeat_timer = loop_add_timer(loop, 0, PROTO_HEARTBEAT_MS * NS_PER_MS, on_heartbeat, d);
    return d->heartbeat_timer < 0 ? -1 : 0;
}

/* A key held back for its own write, which did not come in time: queued again. */
static void ownwrite_due(const char *key, void *arg)
{
    dispatcher_t *d = arg;
    metric_counter_add(d->m_ownwrites, METRIC_LABELS("expired"), 1);
    queue_for(d, key, WORKQUEUE_NOW, 0, CAUSE_OWN_WRITE_EXPIRED, clock_mono_ns());
}

void dispatcher_advance(dispatcher_t *d, int64_t now_ns)
{
    workqueue_advance(d->queue, now_ns);
    ownwrite_expire(d->ownwrites, now_ns, ownwrite_due, d);
}

void dispatcher_drain(dispatcher_t *d)
{
    d->draining = 1;
}

int dispatcher_in_flight(const dispatcher_t *d)
{
    for (size_t i = 0; i < d->nworkers; i++) {
        if (d->workers[i].held.n)
            return 1;
    }
    return 0;
}

int64_t dispatcher_next_deadline(dispatcher_t *d, int64_t now_ns)
{
    int64_t next = workqueue_next_deadline(d->queue, now_ns);
    int64_t own = ownwrite_next_deadline(d->ownwrites);
    if (own > 0 && own < next)
        next = own;
    return next;
}

void dispatcher_update_metrics(dispatcher_t *d, int64_t now_ns)
{
    workqueue_update_metrics(d->queue, now_ns);
}

void dispatcher_destroy(dispatcher_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    dispatcher_t *d = *self_p;
    for (size_t i = 0; i < d->nreaders; i++)
        loop_remove_socket(d->loop, d->readers[i].socket);
    if (d->heartbeat_timer > 0)
        loop_cancel_timer(d->loop, d->heartbeat_timer);
    close_sockets(&d->socks);
    workqueue_destroy(&d->queue);
    obsstore_destroy(&d->observations);
    secretref_destroy(&d->secretrefs);
    ownwrite_destroy(&d->ownwrites);
    echo_destroy(&d->echoes);
    free(d);
    *self_p = NULL;
}
