#include "executor.h"

#include "slotmove.h"

#include "clock.h"
#include "hash.h"
#include "jsonx.h"
#include "log.h"
#include "loop.h"
#include "loop_curl.h"
#include "metrics.h"
#include "redisexec.h"
#include "kube_async.h"
#include "kube_call.h"
#include "render.h"
#include "slotmove.h"
#include "topology.h"

#include <assert.h>
#include <curl/curl.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Why the fence refused a write (worker.h, Fencing). */
#define FENCED_WHY "fenced (not the leader any more, or the item's lease is over): write refused"

#define MEMO_SLOTS 256

typedef struct {
    uint64_t uid;  /* hash of the RedisCluster's uid; 0 = free */
    uint64_t sig;  /* hash of the resourceVersion it was computed from and the status */
} memo_slot_t;

struct exec_memo {
    memo_slot_t slot[MEMO_SLOTS];
    size_t next; /* round-robin victim when full */
};

exec_memo_t *exec_memo_new(void)
{
    return calloc(1, sizeof(exec_memo_t));
}

void exec_memo_destroy(exec_memo_t **memo_p)
{
    if (!memo_p)
        return;
    free(*memo_p);
    *memo_p = NULL;
}


const char *exec_result_name(exec_result_t r)
{
    switch (r) {
    case EXEC_OK: return "ok";
    case EXEC_CONFLICT: return "conflict";
    case EXEC_ERROR: return "error";
    case EXEC_FENCED: return "fenced";
    }
    return "unknown";
}


/* 1 when a is a write of the RedisCluster itself (not of a RedisBackup's status, BACKUP). */
static int of_cluster(const plan_action_t *a)
{
    return a->resource && !strcmp(a->resource, "redisclusters");
}

/* The memo's key and signature of a status write for rc; 0 when they cannot be made
 * (no uid or resourceVersion, out of memory): such a write is never skipped. */
static int status_signature(const json_object *rc, const plan_action_t *a, uint64_t *uid, uint64_t *sig)
{
    const char *u = JSONX_STR_AT(rc, "metadata", "uid"), *rv = JSONX_STR_AT(rc, "metadata", "resourceVersion");
    json_object *st = NULL, *copy = NULL, *conds = NULL;
    if (!u || !rv || !json_object_object_get_ex(a->body, "status", &st) || json_object_deep_copy(st, &copy, NULL))
        return 0;
    /* A retry computed later stamps a later time on a condition that flips: the same
     * content all the same. */
    if (json_object_object_get_ex(copy, "conditions", &conds) && json_object_is_type(conds, json_type_array))
        for (size_t i = 0; i < json_object_array_length(conds); i++) {
            json_object *c = json_object_array_get_idx(conds, i);
            if (json_object_is_type(c, json_type_object))
                json_object_object_del(c, "lastTransitionTime");
        }
    *uid = hash_fnv(HASH_FNV_START, u);
    *sig = hash_fnv(hash_fnv(HASH_FNV_START, rv), json_object_to_json_string_ext(copy, JSON_C_TO_STRING_PLAIN));
    json_object_put(copy);
    return 1;
}

/* The memo's slot for uid, or NULL. */
static memo_slot_t *memo_find(exec_memo_t *m, uint64_t uid)
{
    for (size_t i = 0; m && i < MEMO_SLOTS; i++)
        if (m->slot[i].uid == uid)
            return &m->slot[i];
    return NULL;
}

static void memo_store(exec_memo_t *m, uint64_t uid, uint64_t sig)
{
    if (!m)
        return;
    memo_slot_t *s = memo_find(m, uid);
    if (!s)
        s = memo_find(m, 0);
    if (!s) {
        s = &m->slot[m->next];
        m->next = (m->next + 1) % MEMO_SLOTS;
    }
    s->uid = uid;
    s->sig = sig;
}


/* How PLAN_REDIS reaches the cluster's Redis: x's passwords, TLS settings and secrets. */
static redisexec_client_t client_of(const exec_ctx_t *x)
{
    return (redisexec_client_t){.password = x->redis_password,
                                .old_password = x->redis_old_password,
                                .tls = x->redis_tls,
                                .tls_domain = x->redis_tls_domain,
                                .secrets = x->redis_secrets,
                                .n_secrets = x->redis_n_secrets};
}

/* 1 when the PLAN_REDIS action a is a REPLICAOF the node already follows: a work item
 * can carry an observation older than a command this worker just sent (observerd probes
 * once a second), and sending it again would only repeat its Event. A node that cannot
 * be asked counts as not done (the command then says what fails). */
static int redis_already_done(const exec_ctx_t *x, const plan_action_t *a)
{
    if (a->argc != 3 || strcmp(a->argv[0], "REPLICAOF"))
        return 0;
    const char *av[2] = {"INFO", "replication"};
    char info[8192], err[256], role[16], host[256];
    int port = 0, link = 0;
    int64_t offset = -1;
    redisexec_client_t cl = client_of(x);
    if (redisexec_run(&cl, a->name, a->ip, RENDER_REDIS_PORT, 2, av, REDISEXEC_TIMEOUT_NS, info, sizeof(info), err,
                      sizeof(err)))
        return 0;
    redisexec_parse_info(info, role, sizeof(role), host, sizeof(host), &port, &link, &offset);
    char have_port[16];
    snprintf(have_port, sizeof(have_port), "%d", port);
    return !strcmp(role, "slave") && !strcmp(host, a->argv[1]) && !strcmp(have_port, a->argv[2]);
}

/* 1 when a is CLUSTER FAILOVER FORCE (Cluster mode's step 2b). */
static int is_force(const plan_action_t *a)
{
    return a->argc == 3 && !strcmp(a->argv[0], "CLUSTER") && !strcmp(a->argv[1], "FAILOVER") &&
           !strcmp(a->argv[2], "FORCE");
}

/* Before CLUSTER FAILOVER FORCE (docs/cluster-mode.md, step 2b): the replica's CLUSTER
 * NODES and the INFO replication of it and of each other candidate its body names
 * ({"master": the gone master's id, "candidates": [{"pod", "ip"}]}), now, and
 * redisexec_force_check on them (the plan chose by offsets an observation reported,
 * which may predate the master's last writes). Returns 0 when it may go, -1 with err. */
static int force_guard(const exec_ctx_t *x, const plan_action_t *a, char *err, size_t errlen)
{
    enum { MAXC = 8 };
    static char text[MAXC][4096];
    const char *info[MAXC], *pod[MAXC], *av[2] = {"INFO", "replication"};
    const json_object *list = jsonx_get(a->body, "candidates");
    size_t n = 1 + jsonx_len(list);
    redisexec_client_t cl = client_of(x);
    char e[256];
    if (n > MAXC)
        n = MAXC;
    for (size_t i = 0; i < n; i++) {
        const json_object *c = i ? json_object_array_get_idx(list, i - 1) : NULL;
        const char *ip = i ? JSONX_STR_AT(c, "ip") : a->ip;
        pod[i] = i ? JSONX_STR_AT(c, "pod") : a->name;
        pod[i] = pod[i] ? pod[i] : "a candidate";
        info[i] = ip && *ip && !redisexec_run(&cl, pod[i], ip, RENDER_REDIS_PORT, 2, av, REDISEXEC_TIMEOUT_NS,
                                              text[i], sizeof(text[i]), e, sizeof(e))
                      ? text[i]
                      : NULL;
    }
    const char *cn[2] = {"CLUSTER", "NODES"};
    static char nodes[1 << 17];
    int read = !redisexec_run(&cl, a->name, a->ip, RENDER_REDIS_PORT, 2, cn, REDISEXEC_TIMEOUT_NS, nodes,
                              sizeof(nodes), e, sizeof(e));
    return redisexec_force_check(read ? nodes : NULL, JSONX_STR_AT(a->body, "master"), info, pod, n, err, errlen);
}

/* PLAN_REDIS a, after the fence: skipped (*skipped) when already in effect, else sent.
 * A Redis command is a write like any other: only the leader sends it. */
static exec_result_t exec_redis(const exec_ctx_t *x, const plan_action_t *a, int *skipped, kube_error_t *err)
{
    char rerr[512];
    redisexec_client_t cl = client_of(x);
    if (x->redis_refused) { /* spec.tls without usable settings: nothing to talk with */
        kube_error_set(err, KERR_OTHER, "pod %s: %s", a->name, x->redis_refused);
        return EXEC_ERROR;
    }
    /* COMMAND RECORD (plan.h): the status says no command goes after this moment. */
    if (a->not_after_wall_ns > 0 && clock_wall_ns() >= a->not_after_wall_ns) {
        kube_error_set(err, KERR_OTHER, "pod %s: %s not sent: its plan's moment has passed (a stale plan)", a->name,
                       a->argv[0]);
        return EXEC_ERROR;
    }
    /* Before REPLICAOF NO ONE: the old primary must not answer (docs/failover.md). */
    int guard = a->argc == 3 && !strcmp(a->argv[0], "REPLICAOF") && !strcmp(a->argv[1], "NO")
                    ? redisexec_promote_guard_on(&cl, a->name, a->ip, RENDER_REDIS_PORT, REDISEXEC_PROMOTE_GUARD_NS,
                                                 rerr, sizeof(rerr))
                    : 0;
    /* FAILOVER TO: the old primary must have the new one linked and caught up. */
    if (a->argc >= 4 && !strcmp(a->argv[0], "FAILOVER"))
        guard = redisexec_switchover_on(&cl, a->name, a->ip, RENDER_REDIS_PORT, a->argc, a->argv,
                                        TOPO_SWITCHOVER_MAX_LAG, rerr, sizeof(rerr));
    if (is_force(a))
        guard = force_guard(x, a, rerr, sizeof(rerr));
    if (guard < 0) {
        kube_error_set(err, KERR_OTHER, "pod %s: %s", a->name, rerr);
        return EXEC_ERROR;
    }
    if (a->argc >= 4 && !strcmp(a->argv[0], "FAILOVER") && !guard) {
        rlog_info("redis command done", "reconcileID", x->reconcile_id, "pod", a->name, "command", a->argv[0],
                  "why", a->why);
        return EXEC_OK;
    }
    if (guard > 0 || redis_already_done(x, a)) {
        rlog_debug("redis command already in effect; skipped", "reconcileID", x->reconcile_id, "pod", a->name,
                   "command", a->argv[0]);
        *skipped = 1; /* and its events */
        return EXEC_OK;
    }
    if (redisexec_run(&cl, a->name, a->ip, RENDER_REDIS_PORT, a->argc, a->argv, REDISEXEC_TIMEOUT_NS, NULL, 0, rerr,
                      sizeof(rerr)) &&
        !redisexec_done_already(a->argc, a->argv, rerr)) {
        kube_error_set(err, KERR_OTHER, "pod %s: %s", a->name, rerr);
        return EXEC_ERROR;
    }
    rlog_info("redis command done", "reconcileID", x->reconcile_id, "pod", a->name, "command", a->argv[0], "why",
              a->why);
    return EXEC_OK;
}

/* PLAN_SLOT_MOVE a, after the fence: the job run on the source and target (slotmove.h),
 * until done or its budget is spent (the next reconcile goes on from what Redis says).
 * The moved keys and bytes are counted (rdc_redis_cluster_moved_keys_total, ..._bytes_). */
static exec_result_t exec_slot_move(const exec_ctx_t *x, const plan_action_t *a, kube_error_t *err)
{
    static slotmove_job_t job; /* (large; one executor per process runs one action at a time) */
    slotmove_progress_t pr;
    char why[320];
    if (slotmove_job_from_json(a->body, &job, why, sizeof(why))) {
        kube_error_set(err, KERR_CONFIG, "pod %s: %s", a->name, why);
        return EXEC_ERROR;
    }
    if (x->redis_refused) { /* spec.tls without usable settings */
        kube_error_set(err, KERR_OTHER, "pod %s: %s", a->name, x->redis_refused);
        return EXEC_ERROR;
    }
    /* No slot begun past the leadership's validity (CLOCK_MONOTONIC): a run that outlived
     * it would move slots for a replica that no longer leads. */
    if (x->event_deadline_ns > 0) {
        int64_t left = x->event_deadline_ns - clock_mono_ns() - 1000 * NS_PER_MS;
        job.budget_ns = left < job.budget_ns ? (left > 100 * NS_PER_MS ? left : 100 * NS_PER_MS) : job.budget_ns;
    }
    slotmove_sync_keepalive(x->keepalive, x->keepalive_user);
    int rc = slotmove_run_sync_tls(&job, x->redis_password, x->redis_old_password, x->redis_tls, x->redis_tls_domain,
                                   &pr, why, sizeof(why));
    slotmove_sync_keepalive(NULL, NULL);
    slotmove_count(a->ns, job.cluster, &pr);
    char slots[24], keys[24], bytes[24];
    snprintf(slots, sizeof(slots), "%d", pr.slots_done);
    snprintf(keys, sizeof(keys), "%lld", (long long)pr.keys);
    snprintf(bytes, sizeof(bytes), "%lld", (long long)pr.bytes);
    if (rc < 0) {
        kube_error_set(err, KERR_OTHER, "slots from %s to %s: %s", a->name, job.target.pod, why);
        return EXEC_ERROR;
    }
    rlog_info("slots moved", "reconcileID", x->reconcile_id, "source", a->name, "target", job.target.pod, "slots",
              slots, "keys", keys, "bytes", bytes, "stopped", rc ? "budget" : "no");
    return EXEC_OK;
}

/* A child write that may share a stage: a create or apply of a ConfigMap, Service,
 * StatefulSet or PodDisruptionBudget. */
static int stageable(const plan_action_t *a)
{
    return (a->kind == PLAN_CREATE || a->kind == PLAN_APPLY) && a->resource &&
           (!strcmp(a->resource, "configmaps") || !strcmp(a->resource, "services") ||
            !strcmp(a->resource, "statefulsets") || !strcmp(a->resource, "poddisruptionbudgets"));
}

size_t exec_stage_end(const plan_t *plan, size_t i)
{
    size_t n = plan_action_count(plan);
    if (i >= n)
        return n;
    if (!stageable(plan_action(plan, i)))
        return i + 1;
    int has_cm = !strcmp(plan_action(plan, i)->resource, "configmaps");
    size_t j = i + 1;
    for (; j < n && j - i < EXEC_MAX_STAGE; j++) {
        const plan_action_t *a = plan_action(plan, j);
        if (!stageable(a))
            break;
        /* the pods mount the ConfigMap: the StatefulSet only once it is written */
        if (has_cm && !strcmp(a->resource, "statefulsets"))
            break;
        has_cm |= !strcmp(a->resource, "configmaps");
    }
    return j;
}


/* The result of a failed write, NotFound of a write to something being deleted aside:
 * 0 when it counts as done (err cleared), else the exec result. */
static exec_result_t write_failed(const plan_action_t *a, kube_error_t *err)
{
    int gone = kube_error_is_not_found(err) &&
               (a->kind == PLAN_REMOVE_FINALIZER || a->kind == PLAN_UPDATE_STATUS || a->kind == PLAN_DELETE);
    if (gone) {
        kube_error_clear(err);
        return EXEC_OK;
    }
    return kube_error_is_conflict(err) || kube_error_is_already_exists(err) ? EXEC_CONFLICT : EXEC_ERROR;
}

/* The Events of action i, recorded once it has succeeded. */
static void exec_events(const exec_ctx_t *x, const json_object *rc, const plan_t *plan, size_t i)
{
    for (size_t e = 0; e < plan_event_count(plan); e++) {
        const plan_event_t *ev = plan_event(plan, e);
        if (ev->action != (int)i)
            continue;
        if (x->fence && !x->fence(x->fence_user))
            break;
        if (!x->recorder) {
            rlog_debug("event not recorded: no recorder", "reconcileID", x->reconcile_id, "reason", ev->reason);
            continue;
        }
        const json_object *about = ev->involved ? ev->involved : rc; /* BACKUP: a RedisBackup */
        recorder_result_t rr = recorder_record(x->recorder, about, ev->type, ev->reason, ev->message, x->instance,
                                               x->event_deadline_ns);
        if (rr == RECORDER_FULL || rr == RECORDER_INVALID)
            rlog_warn("event dropped", "reconcileID", x->reconcile_id, "reason", ev->reason, "why",
                      recorder_result_name(rr));
    }
}

/* The memo's verdict on action a: 1 when it is a status write already made from this
 * resourceVersion (skip it and its events); else 0 with *signed_ set when its signature
 * (*uid, *sig) is to be stored once the write succeeds. */
static int memo_skips(const exec_ctx_t *x, const json_object *rc, const plan_action_t *a, int *signed_,
                      uint64_t *uid, uint64_t *sig)
{
    *signed_ = a->kind == PLAN_UPDATE_STATUS && of_cluster(a) && x->memo && status_signature(rc, a, uid, sig);
    if (!*signed_)
        return 0;
    memo_slot_t *s = memo_find(x->memo, *uid);
    if (s && s->sig == *sig) {
        rlog_debug("status already written from this resourceVersion; skipped", "reconcileID", x->reconcile_id,
                   "path", a->path);
        return 1;
    }
    return 0;
}

/* An action that is not a request (the cleanup hook, a Redis command), alone, as the plan
 * says, after the fence. Returns EXEC_OK with *skipped set when a Redis command is
 * already in effect (its events are skipped too). */
static exec_result_t exec_one(const exec_ctx_t *x, const plan_action_t *a, int *skipped, kube_error_t *err)
{
    *skipped = 0;
    if (a->kind == PLAN_CLEANUP) {
        /* The hook for external resources (backups, DNS, ...) would run here; the
         * children themselves go with the garbage collector via owner references. */
        rlog_info("cleanup before deletion", "reconcileID", x->reconcile_id, "name", a->name);
        return EXEC_OK;
    }
    if (x->fence && !x->fence(x->fence_user)) {
        kube_error_set(err, KERR_CONFIG, FENCED_WHY);
        return EXEC_FENCED;
    }
    if (a->kind == PLAN_REDIS)
        return exec_redis(x, a, skipped, err);
    if (a->kind == PLAN_SLOT_MOVE)
        return exec_slot_move(x, a, err);
    kube_error_set(err, KERR_CONFIG, "action %s: nothing knows how to carry it out", plan_action_kind_name(a->kind));
    return EXEC_ERROR;
}

/* ---- the plan as a state machine on a loop (STAGES, exec_run) ------------------------ */

struct exec_async {
    loop_t *loop;
    loop_curl_t *lc;
    int own_lc; /* opened here (exec_async_new without one): closed here */
    int runs;   /* runs started and not yet finished or cancelled */
};

typedef struct {
    exec_run_t *run;
    kube_call_t *call; /* the request with its retries (kube_call.h), NULL once ended */
    kube_error_t err;
    int fenced;        /* the fence refused it or its retry */
} run_req_t;

struct exec_run {
    exec_async_t *a;
    const exec_ctx_t *x;
    const json_object *rc;
    const plan_t *plan;
    exec_run_done_fn *done;
    void *arg;
    size_t i, end;             /* the stage in flight: actions [i, end) */
    run_req_t req[EXEC_MAX_STAGE];
    int pending;               /* requests of the stage not finished */
    int timer;                 /* the finish, 0 = none */
    int signed_;               /* a status write whose memo signature is stored on success */
    uint64_t uid, sig;
    exec_run_outcome_t out;    /* once finished, until done is called */
};

static void run_advance(exec_run_t *run);

static void on_run_finish(loop_t *loop, exec_run_t *run);

static int on_finish_timer(loop_t *loop, int id, void *arg)
{
    (void)id;
    exec_run_t *run = arg;
    run->timer = 0;
    on_run_finish(loop, run);
    return 0;
}

/* Deliver the result on the next turn of the loop (never from inside a curl callback nor
 * from exec_run_start itself). */
static void run_finish(exec_run_t *run, exec_result_t r, size_t failed, const kube_error_t *err)
{
    kube_error_t none;
    kube_error_clear(&none);
    exec_run_keep_outcome(r, failed, err ? err : &none, &run->out);
    run->timer = loop_add_timer(run->a->loop, 0, 0, on_finish_timer, run);
    if (run->timer < 0) {
        run->timer = 0;
        on_run_finish(run->a->loop, run);
    }
}

static void on_run_finish(loop_t *loop, exec_run_t *run)
{
    (void)loop;
    run->a->runs--;
    exec_run_done_fn *done = run->done;
    void *arg = run->arg;
    exec_run_outcome_t out = run->out;
    free(run);
    done(out.r, out.failed, &out.err, arg);
}

static void on_req_done(const kube_call_result_t *res, void *arg);

/* PLAN_AUTH_RECORD: the plan's Secret with the password in place of its token (a new
 * object the caller puts), or NULL with err. */
static json_object *auth_record_body(const exec_ctx_t *x, const plan_action_t *a, kube_error_t *err)
{
    json_object *body = NULL, *sd = NULL;
    if (!x->redis_password || json_object_deep_copy(a->body, &body, NULL) ||
        !json_object_object_get_ex(body, "stringData", &sd)) {
        json_object_put(body);
        kube_error_set(err, KERR_CONFIG, "Secret %s: no password to record", a->name);
        return NULL;
    }
    json_object_object_add(sd, RENDER_AUTH_DEFAULT_KEY, json_object_new_string(x->redis_password));
    return body;
}

/* PLAN_ACL_FILE: the plan's Secret with each ${acl-hash:<user>} token of its stringData
 * replaced by the hash x->redis_secrets holds (a new object the caller puts), or NULL
 * with err (a token no secret is given for: Redis could not load the file). */
static json_object *acl_file_body(const exec_ctx_t *x, const plan_action_t *a, kube_error_t *err)
{
    json_object *body = NULL, *sd = NULL;
    redisexec_client_t cl = client_of(x);
    if (json_object_deep_copy(a->body, &body, NULL) || !json_object_object_get_ex(body, "stringData", &sd)) {
        json_object_put(body);
        kube_error_set(err, KERR_CONFIG, "Secret %s: out of memory", a->name);
        return NULL;
    }
    json_object_object_foreach(sd, k, v)
    {
        char *text = redisexec_expand_text(&cl, json_object_get_string(v));
        int unknown = text && strstr(text, RENDER_ACL_HASH_TOKEN_PREFIX);
        if (text && !unknown)
            json_object_object_add(sd, k, json_object_new_string(text));
        if (text)
            explicit_bzero(text, strlen(text));
        free(text);
        if (!text || unknown) {
            json_object_put(body);
            kube_error_set(err, KERR_CONFIG, "Secret %s: %s", a->name,
                           text ? "a user's password is not known" : "out of memory");
            return NULL;
        }
    }
    return body;
}

/* COMMAND RECORD (plan.h): a status write whose status.lastRedisCommandTime is
 * PLAN_NOW_TOKEN, as a copy with the time it is sent (after every command of the plan
 * before it): a new object the caller puts; NULL when it has no token (the body goes as
 * it is) or memory ran out (err set). */
static json_object *status_now_body(const plan_action_t *a, kube_error_t *err)
{
    json_object *body = NULL, *st = NULL;
    const char *t = JSONX_STR_AT(a->body, "status", "lastRedisCommandTime");
    if (a->kind != PLAN_UPDATE_STATUS || !t || strcmp(t, PLAN_NOW_TOKEN))
        return NULL;
    char now[40];
    clock_format_rfc3339(clock_wall_ns(), 3, now, sizeof(now));
    if (json_object_deep_copy(a->body, &body, NULL) || !json_object_object_get_ex(body, "status", &st) ||
        json_object_object_add(st, "lastRedisCommandTime", json_object_new_string(now))) {
        json_object_put(body);
        kube_error_set(err, KERR_CONFIG, "out of memory writing the status");
        return NULL;
    }
    return body;
}

static void run_stage_done(exec_run_t *run);

/* The stage's request q ended with err (fenced: the fence refused it). */
static void run_req_end(run_req_t *q, const kube_error_t *err, int fenced)
{
    exec_run_t *run = q->run;
    q->err = *err;
    q->fenced = fenced;
    if (fenced)
        kube_error_set(&q->err, KERR_CONFIG, FENCED_WHY);
    if (--run->pending == 0)
        run_stage_done(run);
}

/* Start the request of run->req[k]: one kube_call (its token, the fence before every
 * attempt, the one retry rule, within the client's deadline); one that cannot start
 * ends at once with its error. */
static void run_req_start(exec_run_t *run, size_t k)
{
    run_req_t *q = &run->req[k];
    const plan_action_t *a = plan_action(run->plan, run->i + k);
    const exec_ctx_t *x = run->x;
    kube_error_t e;
    kube_error_clear(&e);
    int tokens = a->kind == PLAN_AUTH_RECORD || a->kind == PLAN_ACL_FILE;
    json_object *secret = a->kind == PLAN_AUTH_RECORD ? auth_record_body(x, a, &e)
                          : a->kind == PLAN_ACL_FILE  ? acl_file_body(x, a, &e)
                                                      : status_now_body(a, &e);
    if (secret || (!tokens && e.code == KERR_OK)) {
        const char *body = json_object_to_json_string_ext(secret ? secret : a->body,
                                                          JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        kube_call_spec_t spec = {.method = a->method, .path = a->path, .content_type = a->content_type,
                                 .body = body, .len = strlen(body), .deadline_ns = kube_client_deadline(x->client),
                                 .fence = x->fence, .fence_arg = x->fence_user, .log_id = x->reconcile_id};
        q->call = kube_call_start(run->a->lc, x->client, &spec, on_req_done, q);
        json_object_put(secret); /* the call keeps a copy of the text */
        if (!q->call)
            kube_error_set(&e, KERR_CONFIG, "out of memory starting the request");
    }
    if (!q->call)
        run_req_end(q, &e, 0);
}

/* A write of the RedisCluster itself that the API took (its finalizer added, its status):
 * the resourceVersion it answered with (text, len bytes) into x->rc_written_rv, the one
 * there before into x->rc_earlier_rv (exec_ctx_t). */
/* The object a write's answer (text, len bytes) holds, or NULL (none, too large, not
 * JSON). */
static json_object *answer_of(const char *text, size_t len)
{
    json_object *o = NULL;
    char why[128];
    if (!text || len > KUBE_ASYNC_MAX_RESPONSE || jsonx_parse_strict(text, len, 64, &o, why, sizeof(why)))
        return NULL;
    return o;
}

/* A write of a child the API took: its answer to x->child_written (exec_ctx_t). */
static void keep_child_answer(const exec_ctx_t *x, const plan_action_t *a, const char *text, size_t len)
{
    static const char *const kinds[] = {"configmaps", "services", "statefulsets", "poddisruptionbudgets"};
    int child = 0;
    for (size_t i = 0; a->resource && i < sizeof(kinds) / sizeof(kinds[0]); i++)
        child |= !strcmp(a->resource, kinds[i]);
    if (!x->child_written || !child || (a->kind != PLAN_CREATE && a->kind != PLAN_APPLY && a->kind != PLAN_REPLACE))
        return;
    json_object *o = answer_of(text, len);
    if (o)
        x->child_written(x->child_written_user, a, o);
    json_object_put(o);
}

static void keep_written_rv(const exec_ctx_t *x, const plan_action_t *a, const char *text, size_t len)
{
    if (!x->rc_written_rv || !text || !of_cluster(a) ||
        (a->kind != PLAN_ADD_FINALIZER && a->kind != PLAN_UPDATE_STATUS))
        return;
    json_object *o = answer_of(text, len);
    if (!o)
        return; /* no version known: informerd does not wait */
    const char *rv = JSONX_STR_AT(o, "metadata", "resourceVersion");
    for (size_t i = 0; x->rc_earlier_rv && x->rc_written_rv[0] && i < EXEC_RC_EARLIER_MAX; i++)
        if (!x->rc_earlier_rv[i][0]) {
            memcpy(x->rc_earlier_rv[i], x->rc_written_rv, EXEC_RV_MAX);
            break;
        }
    if (rv && strlen(rv) < EXEC_RV_MAX)
        memcpy(x->rc_written_rv, rv, strlen(rv) + 1);
    else
        x->rc_written_rv[0] = '\0'; /* the last write's version unknown: none is kept as last */
    if (x->rc_written_obj) {
        json_object_put(*x->rc_written_obj);
        *x->rc_written_obj = o;
        return;
    }
    json_object_put(o);
}

/* BACKUP (docs/backup.md "Metrics"): a RedisBackup's status write that set a final phase
 * and that the API took (a 2xx: not a conflict, not the NotFound of one deleted
 * meanwhile, which write_failed counts as done) is one backup finished, of the cluster rc.
 * The write carries the resourceVersion it was planned from (plan_backup.c), so however
 * many workers plan the same transition, one write of it succeeds: summed over the worker
 * processes (the supervisor's child label keeps their series apart), each finished backup
 * counts once. */
static void count_backup(const json_object *rc, const plan_action_t *a)
{
    const char *result = plan_backup_result(a), *name = JSONX_STR_AT(rc, "metadata", "name");
    if (!result || !name)
        return;
    metric_family_t *f = metrics_counter(metrics_default(), "rdc_backups_total",
                                         "RedisBackups that reached a final phase, by result (succeeded, failed): "
                                         "the status writes of this process that set it.",
                                         "namespace,rediscluster,result");
    metric_counter_add(f, METRIC_LABELS(a->ns, name, result), 1);
}

static void on_req_done(const kube_call_result_t *res, void *arg)
{
    run_req_t *q = arg;
    exec_run_t *run = q->run;
    q->call = NULL; /* freed when this returns */
    if (res->err.code == KERR_OK) {
        const plan_action_t *a = plan_action(run->plan, run->i + (size_t)(q - run->req));
        keep_written_rv(run->x, a, res->body, res->len);
        keep_child_answer(run->x, a, res->body, res->len);
        count_backup(run->rc, a);
    }
    run_req_end(q, &res->err, res->fenced);
}

/* The stage's write k is done: its log line and Events. */
static void run_write_done(exec_run_t *run, size_t k)
{
    const plan_action_t *a = plan_action(run->plan, run->i + k);
    rlog_info("write done", "reconcileID", run->x->reconcile_id, "action", plan_action_kind_name(a->kind), "path",
              a->path, "why", a->why, "batch", run->end - run->i > 1 ? "1" : "0");
    exec_events(run->x, run->rc, run->plan, run->i + k);
}

/* The stage's requests all ended: the first failure in plan order ends the run (the
 * stage's writes that were made get their log lines and Events all the same); else the
 * stage's log lines, memo and Events, and on to the next stage. */
static void run_stage_done(exec_run_t *run)
{
    size_t n = run->end - run->i;
    for (size_t k = 0; k < n; k++) {
        run_req_t *q = &run->req[k];
        if (q->fenced) {
            run_finish(run, EXEC_FENCED, run->i + k, &q->err);
            return;
        }
        if (q->err.code != KERR_OK) {
            exec_result_t r = write_failed(plan_action(run->plan, run->i + k), &q->err);
            if (r != EXEC_OK) {
                for (size_t d = 0; d < n; d++)
                    if (d != k && !run->req[d].fenced && run->req[d].err.code == KERR_OK)
                        run_write_done(run, d);
                run_finish(run, r, run->i + k, &q->err);
                return;
            }
        }
    }
    if (run->signed_)
        memo_store(run->x->memo, run->uid, run->sig);
    for (size_t k = 0; k < n; k++)
        run_write_done(run, k);
    run->i = run->end;
    run_advance(run);
}

/* Send the stage's requests now, each with its own token and retries (kube_call). */
static void run_stage_send(exec_run_t *run)
{
    size_t n = run->end - run->i;
    /* one more than the requests, held until all are started: a request that ends at
     * once must not end the stage while the others are still being started */
    run->pending = (int)n + 1;
    for (size_t k = 0; k < n; k++) {
        memset(&run->req[k], 0, sizeof(run->req[k]));
        run->req[k].run = run;
    }
    for (size_t k = 0; k < n; k++)
        run_req_start(run, k);
    if (--run->pending == 0)
        run_stage_done(run);
}

/* A request the machine sends itself: every action with a method and a path (anything
 * else, i.e. a Redis command or the cleanup hook, runs as exec_one, blocking, as a stage
 * of its own). */
static int sent_async(const plan_action_t *a)
{
    return a->kind != PLAN_REDIS && a->kind != PLAN_CLEANUP && a->method && a->path;
}

/* Run stages from run->i until one must wait (requests in flight) or the plan ends. */
static void run_advance(exec_run_t *run)
{
    const exec_ctx_t *x = run->x;
    size_t n = plan_action_count(run->plan);
    while (run->i < n) {
        size_t end = exec_stage_end(run->plan, run->i);
        const plan_action_t *a = plan_action(run->plan, run->i);
        kube_error_t err;
        kube_error_clear(&err);
        run->signed_ = 0;
        if (end - run->i == 1 && !sent_async(a)) {
            int skipped = 0;
            exec_result_t r = exec_one(x, a, &skipped, &err);
            if (r != EXEC_OK) {
                run_finish(run, r, run->i, &err);
                return;
            }
            if (!skipped)
                exec_events(x, run->rc, run->plan, run->i);
            run->i = end;
            continue;
        }
        if (end - run->i == 1 && memo_skips(x, run->rc, a, &run->signed_, &run->uid, &run->sig)) {
            run->i = end;
            continue;
        }
        assert(end - run->i <= EXEC_MAX_STAGE);
        run->end = end;
        if (x->fence && !x->fence(x->fence_user)) {
            kube_error_set(&err, KERR_CONFIG, FENCED_WHY);
            run_finish(run, EXEC_FENCED, run->i, &err);
            return;
        }
        run_stage_send(run);
        return;
    }
    run_finish(run, EXEC_OK, 0, NULL);
}

exec_async_t *exec_async_new(loop_t *loop, loop_curl_t *lc)
{
    exec_async_t *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    a->loop = loop;
    a->lc = lc;
    if (!lc) {
        a->lc = loop_curl_open(loop);
        a->own_lc = 1;
    }
    if (!a->lc) {
        free(a);
        return NULL;
    }
    return a;
}

loop_curl_t *exec_async_curl(const exec_async_t *a)
{
    return a->lc;
}

loop_t *exec_async_loop(const exec_async_t *a)
{
    return a->loop;
}

void exec_async_destroy(exec_async_t **a_p)
{
    if (!a_p || !*a_p)
        return;
    exec_async_t *a = *a_p;
    assert(a->runs == 0 && "exec_async_destroy: cancel the runs first");
    if (a->own_lc)
        loop_curl_destroy(&a->lc);
    free(a);
    *a_p = NULL;
}

int exec_async_runs(const exec_async_t *a)
{
    return a ? a->runs : 0;
}

exec_run_t *exec_run_start(exec_async_t *a, const exec_ctx_t *x, const json_object *rc, const plan_t *plan,
                           exec_run_done_fn *done, void *arg)
{
    exec_run_t *run = malloc(sizeof(*run));
    if (!run)
        return NULL;
    *run = (exec_run_t){.a = a, .x = x, .rc = rc, .plan = plan, .done = done, .arg = arg};
    a->runs++;
    run_advance(run);
    return run;
}

void exec_run_cancel(exec_run_t **run_p)
{
    exec_run_t *run = run_p ? *run_p : NULL;
    if (!run)
        return;
    for (size_t k = 0; k < EXEC_MAX_STAGE; k++)
        kube_call_cancel(&run->req[k].call);
    if (run->timer)
        loop_cancel_timer(run->a->loop, run->timer);
    run->a->runs--;
    free(run);
    *run_p = NULL;
}

void exec_run_keep_outcome(exec_result_t r, size_t failed, const kube_error_t *err, void *arg)
{
    exec_run_outcome_t *w = arg;
    w->finished = 1;
    w->r = r;
    w->failed = failed;
    w->err = *err;
}

/* LOCAL: a loop of its own for a synchronous caller. */

int exec_local_open(exec_local_t *l, const exec_ctx_t *x)
{
    memset(l, 0, sizeof(*l));
    l->x = *x;
    l->loop = loop_new();
    l->a = l->loop ? exec_async_new(l->loop, NULL) : NULL;
    if (l->a && !x->recorder && x->client) {
        l->rec = recorder_new(x->client, exec_async_curl(l->a), NULL);
        l->x.recorder = l->rec;
    }
    if (!l->a || (!x->recorder && x->client && !l->rec)) {
        exec_local_close(l);
        return -1;
    }
    return 0;
}

void exec_local_wait(exec_local_t *l, const int *finished)
{
    /* every request is bounded by its deadline (30 s without one), every timer by the
     * retries: this ends */
    while (!*finished && loop_run_once(l->loop, NS_PER_SEC) == 0)
        ;
}

void exec_local_close(exec_local_t *l)
{
    int64_t until = clock_mono_ns() + EXEC_LOCAL_FLUSH_NS;
    while (l->rec && recorder_pending(l->rec) && clock_mono_ns() < until)
        loop_run_once(l->loop, 50 * NS_PER_MS);
    recorder_destroy(&l->rec);
    exec_async_destroy(&l->a);
    loop_destroy(&l->loop);
}

exec_result_t exec_plan(const exec_ctx_t *x, const json_object *rc, const plan_t *plan,
                        size_t *failed_action, kube_error_t *err)
{
    kube_error_clear(err);
    *failed_action = 0;
    exec_local_t l;
    exec_run_outcome_t w = {0};
    if (exec_local_open(&l, x)) {
        kube_error_set(err, KERR_CONFIG, "out of memory");
        return EXEC_ERROR;
    }
    exec_run_t *run = exec_run_start(l.a, &l.x, rc, plan, exec_run_keep_outcome, &w);
    if (run)
        exec_local_wait(&l, &w.finished);
    if (!w.finished) { /* out of memory, or the loop failed */
        if (run)
            exec_run_cancel(&run);
        exec_local_close(&l);
        kube_error_set(err, KERR_CONFIG, "out of memory or the event loop failed");
        return EXEC_ERROR;
    }
    exec_local_close(&l);
    *failed_action = w.failed;
    *err = w.err;
    return w.r;
}
