#include "executor.h"

#include "clock.h"
#include "event.h"
#include "jsonx.h"
#include "log.h"
#include "redisexec.h"
#include "render.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MEMO_SLOTS 256
#define EVENT_SLOTS 256
#define EVENT_WINDOW_NS (INT64_C(600) * NS_PER_SEC) /* client-go's correlator: 10 minutes */

typedef struct {
    uint64_t uid;  /* hash of the RedisCluster's uid; 0 = free */
    uint64_t sig;  /* hash of the resourceVersion it was computed from and the status */
} memo_slot_t;

typedef struct {
    uint64_t key;   /* hash of involved object, type, reason, message; 0 = free */
    char name[256]; /* the Event object recorded for it */
    int64_t count;
    int64_t at_ns;  /* monotonic time of the last recording */
} event_slot_t;

struct exec_memo {
    memo_slot_t slot[MEMO_SLOTS];
    size_t next; /* round-robin victim when full */
    event_slot_t event[EVENT_SLOTS];
    size_t next_event;
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

/* FNV-1a over s (and its NUL, so "a"+"b" and "ab" differ), continuing from h. */
static uint64_t fnv(uint64_t h, const char *s)
{
    do {
        h ^= (unsigned char)*s;
        h *= UINT64_C(0x100000001b3);
    } while (*s++);
    return h ? h : 1;
}

#define FNV_START UINT64_C(0xcbf29ce484222325)

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

/* The memo's slot of an identical Event recorded within the window, or NULL. */
static event_slot_t *event_find(exec_memo_t *m, uint64_t key, int64_t now)
{
    for (size_t i = 0; m && i < EVENT_SLOTS; i++)
        if (m->event[i].key == key && now - m->event[i].at_ns < EVENT_WINDOW_NS)
            return &m->event[i];
    return NULL;
}

static void event_store(exec_memo_t *m, uint64_t key, const char *name, int64_t now)
{
    if (!m || !name)
        return;
    event_slot_t *s = NULL;
    for (size_t i = 0; i < EVENT_SLOTS && !s; i++)
        if (!m->event[i].key || now - m->event[i].at_ns >= EVENT_WINDOW_NS)
            s = &m->event[i];
    if (!s) {
        s = &m->event[m->next_event];
        m->next_event = (m->next_event + 1) % EVENT_SLOTS;
    }
    s->key = key;
    snprintf(s->name, sizeof(s->name), "%s", name);
    s->count = 1;
    s->at_ns = now;
}

/* client-go's recorder: an identical Event again within the window bumps the count and
 * lastTimestamp of the one recorded (a merge PATCH). Returns 0 when done, 1 when there
 * is none to bump (or it has expired: 404), -1 with err on another failure. */
static int event_bump(const exec_ctx_t *x, event_slot_t *s, const char *ns, kube_error_t *err)
{
    char now[40];
    clock_format_rfc3339(clock_wall_ns(), 0, now, sizeof(now));
    json_object *patch = json_object_new_object();
    json_object_object_add(patch, "count", json_object_new_int64(s->count + 1));
    json_object_object_add(patch, "lastTimestamp", json_object_new_string(now));
    buf_t path;
    buf_init(&path, 4096);
    int rc = kube_path(&path, "", "v1", ns, "events", s->name, NULL);
    if (!rc)
        rc = kube_client_patch(x->client, buf_str(&path), KUBE_PATCH_MERGE, patch, NULL, NULL, err) ? -1 : 0;
    buf_free(&path);
    json_object_put(patch);
    if (!rc) {
        s->count++;
        s->at_ns = clock_mono_ns();
        return 0;
    }
    if (kube_error_is_not_found(err)) {
        kube_error_clear(err);
        s->key = 0;
        return 1;
    }
    return -1;
}

int exec_record_event(const exec_ctx_t *x, const json_object *rc, const char *type,
                      const char *reason, const char *message, kube_error_t *err)
{
    event_spec_t spec = {0};
    event_involve(&spec, rc);
    /* The RedisCluster as the operator addresses it, whatever version it was read in. */
    spec.api_version = RENDER_GROUP_VERSION;
    spec.kind = "RedisCluster";
    spec.type = type;
    spec.reason = reason;
    spec.message = message;
    spec.action = "Reconcile";
    spec.instance = x->instance;
    const char *name = spec.name, *ns = spec.ns, *uid = spec.uid;
    json_object *ev = event_build(&spec, clock_wall_ns());
    if (!ev) {
        kube_error_set(err, KERR_CONFIG, "event %s: the RedisCluster has no name or namespace", reason);
        return -1;
    }
    int64_t mono = clock_mono_ns();
    uint64_t key = fnv(fnv(fnv(fnv(fnv(fnv(FNV_START, ns), name), uid ? uid : ""), type), reason), message);
    event_slot_t *seen = event_find(x->memo, key, mono);
    if (seen) {
        int b = event_bump(x, seen, ns, err);
        if (b <= 0) {
            json_object_put(ev);
            return b;
        }
    }
    buf_t path;
    buf_init(&path, 4096);
    kube_path(&path, "", "v1", ns, "events", NULL, NULL);
    json_object *made = NULL;
    int rc_ = kube_client_create(x->client, buf_str(&path), ev, NULL, x->memo ? &made : NULL, err);
    buf_free(&path);
    if (!rc_)
        event_store(x->memo, key, JSONX_STR_AT(made, "metadata", "name"), mono);
    json_object_put(made);
    json_object_put(ev);
    return rc_;
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
    *uid = fnv(FNV_START, u);
    *sig = fnv(fnv(FNV_START, rv), json_object_to_json_string_ext(copy, JSON_C_TO_STRING_PLAIN));
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

/* Perform one action. Returns 0, or -1 with err. */
static int exec_action(const exec_ctx_t *x, const plan_action_t *a, kube_error_t *err)
{
    const char *body = json_object_to_json_string_ext(a->body, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    /* Apply and merge patches are idempotent, so the client may retry them after a lost
     * response, and so are a PUT and a DELETE with their preconditions (a repeat gets 409
     * or 404); a create (POST) is retried only where the server cannot have acted. */
    int idempotent = strcmp(a->method, "POST") != 0;
    return kube_client_request(x->client, a->method, a->path, NULL, a->content_type, body,
                               strlen(body), idempotent, NULL, err);
}

/* PLAN_AUTH_RECORD: the plan's Secret with the password in place of its token, applied.
 * Returns 0, or -1 with err. */
static int exec_auth_record(const exec_ctx_t *x, const plan_action_t *a, kube_error_t *err)
{
    json_object *body = NULL, *sd = NULL;
    if (!x->redis_password || json_object_deep_copy(a->body, &body, NULL) ||
        !json_object_object_get_ex(body, "stringData", &sd)) {
        json_object_put(body);
        kube_error_set(err, KERR_CONFIG, "Secret %s: no password to record", a->name);
        return -1;
    }
    json_object_object_add(sd, RENDER_AUTH_DEFAULT_KEY, json_object_new_string(x->redis_password));
    const char *text = json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    int rc = kube_client_request(x->client, a->method, a->path, NULL, a->content_type, text, strlen(text), 1, NULL,
                                 err);
    json_object_put(body);
    return rc ? -1 : 0;
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
    if (redisexec_command(a->ip, RENDER_REDIS_PORT, x->redis_password, x->redis_old_password, 2, av,
                          REDISEXEC_TIMEOUT_NS, info,
                          sizeof(info), err, sizeof(err)))
        return 0;
    redisexec_parse_info(info, role, sizeof(role), host, sizeof(host), &port, &link, &offset);
    char have_port[16];
    snprintf(have_port, sizeof(have_port), "%d", port);
    return !strcmp(role, "slave") && !strcmp(host, a->argv[1]) && !strcmp(have_port, a->argv[2]);
}

/* 1 when err is ACL SETUSER's answer to removing a password the user no longer has: the
 * old password was dropped by an earlier attempt of the same rotation. */
static int redis_removed_already(const plan_action_t *a, const char *err)
{
    return a->argc >= 3 && !strcmp(a->argv[0], "ACL") && a->argv[a->argc - 1][0] == '<' &&
           strstr(err, "does not exist") != NULL;
}

exec_result_t exec_plan(const exec_ctx_t *x, const json_object *rc, const plan_t *plan,
                        size_t *failed_action, kube_error_t *err)
{
    kube_error_clear(err);
    size_t n = plan_action_count(plan);
    for (size_t i = 0; i < n; i++) {
        const plan_action_t *a = plan_action(plan, i);
        *failed_action = i;
        uint64_t uid = 0, sig = 0;
        int signed_ = a->kind == PLAN_UPDATE_STATUS && x->memo && status_signature(rc, a, &uid, &sig);
        if (signed_) {
            memo_slot_t *s = memo_find(x->memo, uid);
            if (s && s->sig == sig) {
                rlog_debug("status already written from this resourceVersion; skipped", "reconcileID",
                           x->reconcile_id, "path", a->path);
                continue; /* and its events */
            }
        }
        if (a->kind == PLAN_CLEANUP) {
            /* The hook for external resources (backups, DNS, ...) would run here; the
             * children themselves go with the garbage collector via owner references. */
            rlog_info("cleanup before deletion", "reconcileID", x->reconcile_id, "name",
                      a->name);
        } else if (a->kind == PLAN_REDIS) {
            /* A Redis command is a write like any other: only the leader sends it. */
            if (x->fence && !x->fence(x->fence_user)) {
                kube_error_set(err, KERR_CONFIG, "not the leader any more: write refused");
                return EXEC_FENCED;
            }
            char rerr[512];
            int guard = a->argc == 3 && !strcmp(a->argv[0], "REPLICAOF") && !strcmp(a->argv[1], "NO")
                            ? redisexec_promote_guard(a->ip, RENDER_REDIS_PORT, x->redis_password,
                                                      x->redis_old_password, REDISEXEC_PROMOTE_GUARD_NS, rerr,
                                                      sizeof(rerr))
                            : 0;
            if (guard < 0) {
                kube_error_set(err, KERR_OTHER, "pod %s: %s", a->name, rerr);
                return EXEC_ERROR;
            }
            if (guard > 0 || redis_already_done(x, a)) {
                rlog_debug("redis command already in effect; skipped", "reconcileID", x->reconcile_id, "pod",
                           a->name, "command", a->argv[0]);
                continue; /* and its events */
            }
            if (redisexec_command(a->ip, RENDER_REDIS_PORT, x->redis_password, x->redis_old_password, a->argc,
                                  a->argv, REDISEXEC_TIMEOUT_NS, NULL, 0, rerr, sizeof(rerr)) &&
                !redis_removed_already(a, rerr)) {
                kube_error_set(err, KERR_OTHER, "pod %s: %s", a->name, rerr);
                return EXEC_ERROR;
            }
            rlog_info("redis command done", "reconcileID", x->reconcile_id, "pod", a->name, "command", a->argv[0],
                      "why", a->why);
        } else if (a->kind == PLAN_AUTH_RECORD) {
            if (x->fence && !x->fence(x->fence_user)) {
                kube_error_set(err, KERR_CONFIG, "not the leader any more: write refused");
                return EXEC_FENCED;
            }
            if (exec_auth_record(x, a, err))
                return kube_error_is_conflict(err) ? EXEC_CONFLICT : EXEC_ERROR;
            rlog_info("write done", "reconcileID", x->reconcile_id, "action", plan_action_kind_name(a->kind), "path",
                      a->path, "why", a->why);
        } else {
            if (x->fence && !x->fence(x->fence_user)) {
                kube_error_set(err, KERR_CONFIG, "not the leader any more: write refused");
                return EXEC_FENCED;
            }
            if (exec_action(x, a, err)) {
                int gone = kube_error_is_not_found(err) && (a->kind == PLAN_REMOVE_FINALIZER ||
                                                            a->kind == PLAN_UPDATE_STATUS || a->kind == PLAN_DELETE);
                if (!gone)
                    return kube_error_is_conflict(err) || kube_error_is_already_exists(err) ? EXEC_CONFLICT
                                                                                           : EXEC_ERROR;
                kube_error_clear(err);
            }
            if (signed_)
                memo_store(x->memo, uid, sig);
            rlog_info("write done", "reconcileID", x->reconcile_id, "action",
                       plan_action_kind_name(a->kind), "path", a->path, "why", a->why);
        }
        for (size_t e = 0; e < plan_event_count(plan); e++) {
            const plan_event_t *ev = plan_event(plan, e);
            if (ev->action != (int)i)
                continue;
            if (x->fence && !x->fence(x->fence_user))
                break;
            kube_error_t eerr;
            kube_error_clear(&eerr);
            if (exec_record_event(x, rc, ev->type, ev->reason, ev->message, &eerr)) {
                char line[1024];
                rlog_warn("cannot record event", "reconcileID", x->reconcile_id, "reason",
                          ev->reason, "error", kube_error_str(&eerr, line, sizeof(line)));
            }
        }
    }
    return EXEC_OK;
}
