/* plan_backup: BACKUP. See plan_backup.h. */
#include "plan_backup.h"

#include "buf.h"
#include "clock.h"
#include "jsonx.h"
#include "plan_build.h"
#include "render.h"
#include "schedule.h"
#include "topology.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NS_PER_S INT64_C(1000000000)
#define RB_KIND "RedisBackup"

/* ---- reading ------------------------------------------------------------------------- */

/* The first object of arr whose metadata.labels[label] is value, or NULL. */
static const json_object *by_label(const json_object *arr, const char *label, const char *value)
{
    for (size_t i = 0; i < jsonx_len(arr); i++) {
        const json_object *o = json_object_array_get_idx(arr, i);
        if (jsonx_str_is(JSONX_AT(o, "metadata", "labels"), label, value))
            return o;
    }
    return NULL;
}

/* 1 when conds (a status.conditions array) has type with status True. */
static int cond_true(const json_object *conds, const char *type)
{
    const json_object *k = jsonx_find(conds, "type", type);
    return k && jsonx_str_is(k, "status", "True");
}

/* 0 when phase is a final one. */
static int unfinished(const char *phase)
{
    return !phase || (strcmp(phase, "Succeeded") && strcmp(phase, "Failed"));
}

/* The source pod (plan_backup.h, START): its name into *pod; its IP, or NULL. */
static const char *pick_source(const json_object *pods, const char **pod)
{
    const json_object *best = NULL;
    int best_rank = 0;
    for (size_t i = 0; i < jsonx_len(pods); i++) {
        const json_object *p = json_object_array_get_idx(pods, i);
        const json_object *meta = jsonx_get(p, "metadata");
        if (!JSONX_STR_AT(p, "status", "podIP") || !*JSONX_STR_AT(p, "status", "podIP") ||
            jsonx_get(meta, "deletionTimestamp") || !cond_true(JSONX_AT(p, "status", "conditions"), "Ready"))
            continue;
        int rank = jsonx_str_is(jsonx_get(meta, "labels"), TOPO_ROLE_LABEL, "replica") ? 2 : 1;
        if (rank > best_rank) {
            best = p;
            best_rank = rank;
        }
    }
    *pod = best ? JSONX_STR_AT(best, "metadata", "name") : NULL;
    return best ? JSONX_STR_AT(best, "status", "podIP") : NULL;
}

/* ---- writing ------------------------------------------------------------------------- */

/* {apiVersion, kind RedisBackup, metadata {name, namespace[, uid][, resourceVersion]}}
 * (with: RB_UID, RB_RV); NULL with *oom. */
#define RB_UID 1
#define RB_RV 2
static json_object *rb_head(const json_object *rb, int with, int *oom)
{
    json_object *o = jsonx_new_obj(oom), *m = jsonx_new_obj(oom);
    jsonx_put(o, "apiVersion", jsonx_new_str(RENDER_GROUP_VERSION, oom), oom);
    jsonx_put(o, "kind", jsonx_new_str(RB_KIND, oom), oom);
    jsonx_put(m, "name", jsonx_new_str(JSONX_STR_AT(rb, "metadata", "name"), oom), oom);
    jsonx_put(m, "namespace", jsonx_new_str(JSONX_STR_AT(rb, "metadata", "namespace"), oom), oom);
    if ((with & RB_UID) && JSONX_STR_AT(rb, "metadata", "uid"))
        jsonx_put(m, "uid", jsonx_new_str(JSONX_STR_AT(rb, "metadata", "uid"), oom), oom);
    if ((with & RB_RV) && jsonx_str_set(jsonx_get(rb, "metadata"), "resourceVersion"))
        jsonx_put(m, "resourceVersion", jsonx_new_str(JSONX_STR_AT(rb, "metadata", "resourceVersion"), oom), oom);
    jsonx_put(o, "metadata", m, oom);
    return jsonx_done(o, *oom);
}

/* Plan the status write of rb (st taken) and an Event about rb of type/reason (NULL:
 * none) saying message. A final phase goes with the resourceVersion it was decided from,
 * a compare-and-swap as FAILOVER's record: of the writes of one transition planned from
 * the same RedisBackup (a retry dispatched before the watch brought the first one's,
 * another worker), the API takes one and refuses the others with 409, so the transition
 * is counted once (plan_backup_result). */
static void rb_status(const plan_ctx_t *c, const json_object *rb, json_object *st, const char *why,
                      const char *type, const char *reason)
{
    plan_t *p = c->plan;
    int *oom = plan_oom(p);
    json_object *body = rb_head(rb, unfinished(jsonx_str(st, "phase")) ? 0 : RB_RV, oom);
    jsonx_put(body, "status", st, oom);
    const char *name = JSONX_STR_AT(rb, "metadata", "name");
    int i = plan_add_action(p, PLAN_UPDATE_STATUS, RENDER_GROUP_VERSION, "redisbackups", c->ns, name,
                            jsonx_done(body, *oom), why);
    if (i < 0 || !reason)
        return;
    plan_add_event(p, type, reason, i, "RedisBackup %s/%s: %s", c->ns, name, why);
    plan_event_about(p, rb_head(rb, RB_UID, oom));
}

/* A status {phase, message[, sourcePod]} (the observed sourcePod kept). */
static json_object *phase_status(const json_object *rb, const char *phase, const char *message, int *oom)
{
    json_object *st = jsonx_new_obj(oom);
    jsonx_put(st, "phase", jsonx_new_str(phase, oom), oom);
    jsonx_put(st, "message", jsonx_new_str(message, oom), oom);
    const char *src = JSONX_STR_AT(rb, "status", "sourcePod");
    if (src)
        jsonx_put(st, "sourcePod", jsonx_new_str(src, oom), oom);
    return st;
}

/* Phase Failed with message, and the Warning Event BackupFailed. */
static void rb_failed(const plan_ctx_t *c, const json_object *rb, const char *message)
{
    char now[40];
    int *oom = plan_oom(c->plan);
    json_object *st = phase_status(rb, "Failed", message, oom);
    const char *start = JSONX_STR_AT(rb, "status", "startTime");
    if (start)
        jsonx_put(st, "startTime", jsonx_new_str(start, oom), oom);
    jsonx_put(st, "completionTime", jsonx_new_str(clock_format_rfc3339(c->now, 0, now, sizeof(now)), oom), oom);
    rb_status(c, rb, st, message, "Warning", "BackupFailed");
}

const char *plan_backup_result(const plan_action_t *a)
{
    if (a->kind != PLAN_UPDATE_STATUS || !a->resource || strcmp(a->resource, "redisbackups"))
        return NULL;
    const char *phase = JSONX_STR_AT(a->body, "status", "phase");
    return !phase                        ? NULL
           : !strcmp(phase, "Succeeded") ? "succeeded"
           : !strcmp(phase, "Failed")    ? "failed"
                                         : NULL;
}

/* ---- START --------------------------------------------------------------------------- */

/* prefix, with a '/' after it when it has none ("" stays ""). */
static const char *slash(const char *prefix)
{
    size_t n = prefix ? strlen(prefix) : 0;
    return n && prefix[n - 1] != '/' ? "/" : "";
}

/* What the Job of rb takes (render.h), from its spec, but its takes; 0, or -1 when the
 * spec lacks a required field (*missing names it). *scheduled: a schedule's. */
static int backup_of(const plan_ctx_t *c, const json_object *rb, render_backup_t *b, const char **prefix,
                     int *scheduled, const char **missing)
{
    const json_object *spec = jsonx_get(rb, "spec"), *dest = jsonx_get(spec, "destination");
    memset(b, 0, sizeof(*b));
    b->name = JSONX_STR_AT(rb, "metadata", "name");
    b->ns = c->ns;
    b->uid = JSONX_STR_AT(rb, "metadata", "uid");
    b->endpoint = jsonx_str_set(dest, "endpoint");
    b->bucket = jsonx_str_set(dest, "bucket");
    b->region = jsonx_str_set(dest, "region");
    *prefix = jsonx_str_set(dest, "prefix");
    b->credentials_secret = JSONX_STR_AT(spec, "credentialsSecret", "name");
    b->ca_secret = JSONX_STR_AT(spec, "caSecret", "name");
    b->keep = c->spec->backup.keep > 0 ? c->spec->backup.keep : RDC_SPEC_DEFAULT_BACKUP_KEEP;
    *scheduled = jsonx_str_is(JSONX_AT(rb, "metadata", "labels"), RENDER_LABEL_SCHEDULE, c->name);
    *missing = !b->uid                  ? "metadata.uid"
               : !b->endpoint           ? "spec.destination.endpoint"
               : !b->bucket             ? "spec.destination.bucket"
               : !b->credentials_secret ? "spec.credentialsSecret.name"
               : *scheduled && !*prefix ? "spec.destination.prefix"
                                         : NULL;
    return *missing ? -1 : 0;
}

/* Pending with msg (written when the status does not say so already). */
static void rb_pending(const plan_ctx_t *c, const json_object *rb, const char *msg)
{
    plan_requeue_within(c->plan, PLAN_REQUEUE_NOT_READY_NS);
    if (jsonx_str_is(jsonx_get(rb, "status"), "phase", "Pending") &&
        jsonx_str_is(jsonx_get(rb, "status"), "message", msg))
        return;
    rb_status(c, rb, phase_status(rb, "Pending", msg, plan_oom(c->plan)), msg, NULL, NULL);
}

/* The names of one take: its key (one-off) or prefix (a schedule's), its slots. */
typedef struct {
    char key[1200], prefix[1000], slots[1024];
    const char *pod;
} take_names_t;

/* The take (plan_backup.h START) of one pod for rb: a one-off's key <prefix>[/]<name>.rdb
 * (CLUSTER: <prefix>[/]<name>/shard-<k>.rdb), a schedule's prefix (CLUSTER:
 * <prefix>[/]shard-<k>); k -1: not a shard. */
static void take_names(const render_backup_t *b, const char *prefix, int scheduled, int k, take_names_t *n,
                       render_backup_take_t *t)
{
    const char *p = prefix ? prefix : "";
    if (scheduled && k < 0)
        snprintf(n->prefix, sizeof(n->prefix), "%s", p);
    else if (scheduled)
        snprintf(n->prefix, sizeof(n->prefix), "%s%s" RENDER_BACKUP_SHARD_PREFIX "%d", p, slash(p), k);
    else if (k < 0)
        snprintf(n->key, sizeof(n->key), "%s%s%s.rdb", p, slash(p), b->name);
    else
        snprintf(n->key, sizeof(n->key), "%s%s%s/" RENDER_BACKUP_SHARD_PREFIX "%d.rdb", p, slash(p), b->name, k);
    t->key = scheduled ? NULL : n->key;
    t->prefix = scheduled ? n->prefix : NULL;
}

/* CLUSTER: shard k's source: a Ready, linked replica of its master with an IP, else the
 * master; -1 when neither. */
static int shard_source(const ctopo_input_t *in, const ctopo_shard_t *sh)
{
    for (int j = 0; j < 1 + CTOPO_MAX_REPLICAS; j++) {
        int i = sh->replica[j];
        if (i >= 0 && in->pod[i].ready && in->pod[i].link_up && !in->pod[i].terminating && in->pod[i].ip[0])
            return i;
    }
    int m = sh->master;
    return m >= 0 && in->pod[m].ready && !in->pod[m].terminating && in->pod[m].ip[0] ? m : -1;
}

/* CLUSTER: the slots shard k's master m serves (its own view), "" when they do not fit. */
static void master_slots(const ctopo_input_t *in, int m, char *out, size_t len)
{
    const cn_node_t *me = m >= 0 && in->pod[m].view ? cn_myself(in->pod[m].view) : NULL;
    out[0] = '\0';
    if (me && me->nranges && me->nranges * 12 < len)
        cn_ranges_text(me->ranges, me->nranges, out, len);
}

/* CLUSTER: each shard's take into b (names in n); 0, or 1 with why it waits in why. A
 * backup of a Cluster-mode cluster takes every shard at once, while no slot moves. */
static int shard_takes(const plan_ctx_t *c, render_backup_t *b, const char *prefix, int scheduled, take_names_t *n,
                       char *why, size_t len)
{
    const ctopo_result_t *r = c->cluster;
    const ctopo_input_t *in = c->cluster_in;
    if (r && in && (r->nmoves || r->slots_to_move)) {
        snprintf(why, len, "waiting for the reshard to finish (%d slot(s) to move): a backup is taken while no "
                 "slot moves", r->slots_to_move);
        return 1;
    }
    if (!r || !in || !r->healthy) {
        snprintf(why, len, "waiting for the cluster to be healthy (%s): every shard is taken at once",
                 r ? r->reason : "not observed yet");
        return 1;
    }
    b->sharded = 1;
    for (int k = 0; k < c->spec->cluster.shards && k < RENDER_BACKUP_MAX_SHARDS; k++) {
        int i = shard_source(in, &r->shard[k]);
        if (i < 0) {
            snprintf(why, len, "waiting for a Ready pod of shard %d to take the backup from", k);
            return 1;
        }
        render_backup_take_t *t = &b->take[b->ntakes++];
        take_names(b, prefix, scheduled, k, &n[k], t);
        t->ip = in->pod[i].ip;
        n[k].pod = in->pod[i].pod;
        master_slots(in, r->shard[k].master, n[k].slots, sizeof(n[k].slots));
        t->slots = n[k].slots[0] ? n[k].slots : NULL;
    }
    return 0;
}

/* The Running status of rb, its takes b taken from the pods of n. */
static json_object *running_status(const plan_ctx_t *c, const render_backup_t *b, const take_names_t *n, int *oom)
{
    char now[40];
    json_object *st = jsonx_new_obj(oom);
    jsonx_put(st, "phase", jsonx_new_str("Running", oom), oom);
    jsonx_put(st, "message", jsonx_new_str("", oom), oom);
    jsonx_put(st, "sourcePod", jsonx_new_str(n[0].pod, oom), oom);
    jsonx_put(st, "startTime", jsonx_new_str(clock_format_rfc3339(c->now, 0, now, sizeof(now)), oom), oom);
    if (!b->sharded)
        return st;
    json_object *arr = jsonx_new_arr(oom);
    for (int k = 0; k < b->ntakes; k++) {
        json_object *o = jsonx_new_obj(oom);
        jsonx_put(o, "shard", jsonx_new_int(k, oom), oom);
        jsonx_put(o, "sourcePod", jsonx_new_str(n[k].pod, oom), oom);
        if (n[k].slots[0])
            jsonx_put(o, "slots", jsonx_new_str(n[k].slots, oom), oom);
        jsonx_push(arr, o, oom);
    }
    jsonx_put(st, "shards", arr, oom);
    return st;
}

/* START of rb: its Job and status Running (n: room for RENDER_BACKUP_MAX_SHARDS names). */
static void backup_start(const plan_ctx_t *c, const json_object *rb, take_names_t *n)
{
    plan_t *p = c->plan;
    render_backup_t b;
    char why[900];
    const char *missing = NULL, *prefix = NULL;
    int scheduled = 0;
    if (backup_of(c, rb, &b, &prefix, &scheduled, &missing)) {
        snprintf(why, sizeof(why), "%s is missing", missing);
        rb_failed(c, rb, why);
        return;
    }
    if (c->spec->mode == RDC_MODE_CLUSTER) {
        if (shard_takes(c, &b, prefix, scheduled, n, why, sizeof(why))) {
            rb_pending(c, rb, why);
            return;
        }
    } else {
        b.ntakes = 1;
        take_names(&b, prefix, scheduled, -1, &n[0], &b.take[0]);
        if (!(b.take[0].ip = pick_source(c->more->members, &n[0].pod))) {
            rb_pending(c, rb, "waiting for a Ready pod of the cluster to take the backup from");
            return;
        }
    }
    if (b.sharded)
        snprintf(why, sizeof(why), "RedisBackup %s/%s has no Job: take its %d shards, shard 0 from pod %s", c->ns,
                 b.name, b.ntakes, n[0].pod);
    else
        snprintf(why, sizeof(why), "RedisBackup %s/%s has no Job: take it from pod %s (%s)", c->ns, b.name, n[0].pod,
                 b.take[0].ip);
    int i = plan_add_action(p, PLAN_CREATE, "batch/v1", "jobs", c->ns, b.name, render_backup_job(&c->in, &b), why);
    if (i < 0)
        return;
    if (b.sharded)
        snprintf(why, sizeof(why), "started: Job %s takes %d shards at once (shard 0 from pod %s)", b.name, b.ntakes,
                 n[0].pod);
    else
        snprintf(why, sizeof(why), "started: Job %s takes the backup from pod %s", b.name, n[0].pod);
    rb_status(c, rb, running_status(c, &b, n, plan_oom(p)), why, "Normal", "BackupStarted");
}

/* ---- FINISH -------------------------------------------------------------------------- */

/* The terminated state of pod's first container that has one, or NULL. */
static const json_object *terminated_of(const json_object *pod)
{
    const json_object *cs = JSONX_AT(pod, "status", "containerStatuses");
    for (size_t i = 0; i < jsonx_len(cs); i++) {
        const json_object *t = JSONX_AT(json_object_array_get_idx(cs, i), "state", "terminated");
        if (jsonx_typed(t, json_type_object))
            return t;
    }
    return NULL;
}

/* msg without its surrounding blanks, at most PLAN_BACKUP_MESSAGE_MAX bytes, into out. */
static void trimmed(const char *msg, char *out, size_t len)
{
    while (*msg == ' ' || *msg == '\n' || *msg == '\r' || *msg == '\t')
        msg++;
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == ' ' || msg[n - 1] == '\n' || msg[n - 1] == '\r' || msg[n - 1] == '\t'))
        n--;
    if (n >= len)
        n = len - 1;
    memcpy(out, msg, n);
    out[n] = '\0';
}

/* Copy into dst what rdc-backup take's line o says of its object (key, sha256, size,
 * offset) and, with times, of when (startTime, completionTime). */
static void copy_line(json_object *dst, const json_object *o, int times, int *oom)
{
    static const char *const strs[] = {"key", "sha256", "startTime", "completionTime"};
    static const char *const ints[] = {"size", "offset"};
    for (size_t i = 0; i < (times ? 4u : 2u); i++)
        if (jsonx_str(o, strs[i]))
            jsonx_put(dst, strs[i], jsonx_new_str(jsonx_str(o, strs[i]), oom), oom);
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
        int64_t v;
        if (jsonx_int(o, ints[i], &v) == 0)
            jsonx_put(dst, ints[i], jsonx_new_int(v, oom), oom);
    }
}

/* The Succeeded status of the line o (result ok) for rb. */
static json_object *succeeded_status(const json_object *rb, const json_object *o, int *oom)
{
    json_object *st = phase_status(rb, "Succeeded", "", oom);
    copy_line(st, o, 1, oom);
    return st;
}

/* Why the terminated container t failed, into why: its message (rdc-backup's line), else
 * its exit code, and the signal that ended it (exit codes above 128: a SIGKILL by the OOM
 * killer, an eviction, a node lost) when there was no line at all. */
static void failed_why(const json_object *t, const char *msg, char *why, size_t cap)
{
    int64_t code = jsonx_int_or(t, "exitCode", -1);
    if (*msg)
        snprintf(why, cap, "%s", msg);
    else if (code > 128 && code < 160)
        snprintf(why, cap, "the backup's container was killed by signal %lld (exit code %lld) before it said "
                 "anything: no object was completed", (long long)(code - 128), (long long)code);
    else
        snprintf(why, cap, "the backup's container ended with exit code %lld and no message", (long long)code);
}

/* The terminated container t's line when it is a success (exit 0, one JSON line that says
 * "result":"ok"): a new object; else NULL, with why it failed in why. */
static json_object *ok_line(const json_object *t, char *why, size_t cap)
{
    char msg[PLAN_BACKUP_MESSAGE_MAX + 1], err[128];
    trimmed(jsonx_str(t, "message") ? jsonx_str(t, "message") : "", msg, sizeof(msg));
    json_object *o = NULL;
    if (jsonx_int_is(t, "exitCode", 0) && *msg && !strchr(msg, '\n') &&
        jsonx_parse_strict(msg, strlen(msg), 16, &o, err, sizeof(err)) == 0 && jsonx_str_is(o, "result", "ok"))
        return o;
    json_object_put(o);
    failed_why(t, msg, why, cap);
    return NULL;
}

/* FINISH from the terminated container t: Succeeded only on exit 0 and a JSON line that
 * says "result":"ok"; else Failed with the message. */
static void finish_from(const plan_ctx_t *c, const json_object *rb, const json_object *t)
{
    char why[PLAN_BACKUP_MESSAGE_MAX + 200];
    json_object *o = ok_line(t, why, sizeof(why));
    if (o) {
        snprintf(why, sizeof(why), "succeeded: %s, %lld bytes", jsonx_str(o, "key") ? jsonx_str(o, "key") : "?",
                 (long long)jsonx_int_or(o, "size", 0));
        rb_status(c, rb, succeeded_status(rb, o, plan_oom(c->plan)), why, "Normal", "BackupSucceeded");
    } else
        rb_failed(c, rb, why);
    json_object_put(o);
}

/* CLUSTER: shard k's entry of a Succeeded status from its line o and rec, the Running
 * status's entry (sourcePod, slots). */
static json_object *shard_entry(int k, const json_object *o, const json_object *rec, int *oom)
{
    json_object *e = jsonx_new_obj(oom);
    jsonx_put(e, "shard", jsonx_new_int(k, oom), oom);
    const char *pod = jsonx_str_set(rec, "sourcePod"), *slots = jsonx_str_set(o, "slots");
    if (!slots)
        slots = jsonx_str_set(rec, "slots");
    if (pod)
        jsonx_put(e, "sourcePod", jsonx_new_str(pod, oom), oom);
    if (slots)
        jsonx_put(e, "slots", jsonx_new_str(slots, oom), oom);
    copy_line(e, o, 0, oom);
    return e;
}

/* CLUSTER: the Succeeded status of the shards' entries e (n of them, in order): key the
 * prefix their keys share (to the last '/'), size their sum, the earliest start and the
 * latest completion of their lines o. */
static json_object *shards_succeeded(const json_object *rb, json_object **e, json_object **o, int n, int *oom)
{
    json_object *st = phase_status(rb, "Succeeded", "", oom), *arr = jsonx_new_arr(oom);
    const char *first = jsonx_str(e[0], "key") ? jsonx_str(e[0], "key") : "", *start = NULL, *end = NULL;
    size_t common = strlen(first);
    int64_t size = 0;
    for (int k = 0; k < n; k++) {
        const char *key = jsonx_str(e[k], "key") ? jsonx_str(e[k], "key") : "";
        size_t j = 0;
        while (j < common && key[j] == first[j])
            j++;
        common = j;
        size += jsonx_int_or(e[k], "size", 0);
        const char *s = jsonx_str(o[k], "startTime"), *f = jsonx_str(o[k], "completionTime");
        start = s && (!start || strcmp(s, start) < 0) ? s : start;
        end = f && (!end || strcmp(f, end) > 0) ? f : end;
        jsonx_push(arr, json_object_get(e[k]), oom);
    }
    while (common && first[common - 1] != '/')
        common--;
    jsonx_put(st, "key", json_object_new_string_len(first, (int)common), oom);
    jsonx_put(st, "size", jsonx_new_int(size, oom), oom);
    if (start)
        jsonx_put(st, "startTime", jsonx_new_str(start, oom), oom);
    if (end)
        jsonx_put(st, "completionTime", jsonx_new_str(end, oom), oom);
    jsonx_put(st, "shards", arr, oom);
    return st;
}

/* CLUSTER: k of a container named RENDER_BACKUP_SHARD_PREFIX "<k>", else -1. */
static int shard_of_container(const char *name)
{
    size_t n = sizeof(RENDER_BACKUP_SHARD_PREFIX) - 1;
    if (!name || strncmp(name, RENDER_BACKUP_SHARD_PREFIX, n) || !isdigit((unsigned char)name[n]))
        return -1;
    char *end = NULL;
    long k = strtol(name + n, &end, 10);
    return *end || k >= RENDER_BACKUP_MAX_SHARDS ? -1 : (int)k;
}

/* CLUSTER: FINISH of rb from its pod's containers, one per shard (RENDER_BACKUP_SHARD_PREFIX
 * "<k>"): Succeeded when every shard of the Running status's record said ok; else Failed
 * with each failed shard's why. */
static void finish_shards(const plan_ctx_t *c, const json_object *rb, const json_object *pod)
{
    const json_object *cs = JSONX_AT(pod, "status", "containerStatuses");
    const json_object *rec = JSONX_AT(rb, "status", "shards");
    json_object *e[RENDER_BACKUP_MAX_SHARDS] = {0}, *o[RENDER_BACKUP_MAX_SHARDS] = {0};
    int n = (int)jsonx_len(rec), *oom = plan_oom(c->plan);
    char one[PLAN_BACKUP_MESSAGE_MAX + 200];
    buf_t why;
    buf_init(&why, PLAN_BACKUP_MESSAGE_MAX * 2);
    n = n < 1 ? (int)jsonx_len(cs) : n > RENDER_BACKUP_MAX_SHARDS ? RENDER_BACKUP_MAX_SHARDS : n;
    for (size_t i = 0; i < jsonx_len(cs); i++) {
        const json_object *s = json_object_array_get_idx(cs, i);
        int k = shard_of_container(jsonx_str(s, "name"));
        if (k < 0 || k >= n || o[k])
            continue;
        if ((o[k] = ok_line(JSONX_AT(s, "state", "terminated"), one, sizeof(one))))
            e[k] = shard_entry(k, o[k], json_object_array_get_idx(rec, (size_t)k), oom);
        else
            buf_printf(&why, "%sshard %d: %s", why.len ? "; " : "", k, one);
    }
    for (int k = 0; k < n && !why.len; k++)
        if (!e[k])
            buf_printf(&why, "shard %d's container reported no result", k);
    if (why.len)
        rb_failed(c, rb, buf_str(&why));
    else {
        snprintf(one, sizeof(one), "succeeded: %d shards", n);
        rb_status(c, rb, shards_succeeded(rb, e, o, n, oom), one, "Normal", "BackupSucceeded");
    }
    buf_free(&why);
    for (int k = 0; k < RENDER_BACKUP_MAX_SHARDS; k++) {
        json_object_put(e[k]);
        json_object_put(o[k]);
    }
}

/* FINISH of rb, whose Job is job: from its pod's termination message, or the Job's
 * Failed condition when no pod says anything; nothing while it runs. */
static void backup_finish(const plan_ctx_t *c, const json_object *rb, const json_object *job)
{
    const char *name = JSONX_STR_AT(rb, "metadata", "name");
    const json_object *pod = by_label(c->more->backup_pods, RENDER_LABEL_BACKUP, name);
    const char *phase = JSONX_STR_AT(pod, "status", "phase");
    const json_object *t = terminated_of(pod);
    if (t && phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"))) {
        if (c->spec->mode == RDC_MODE_CLUSTER)
            finish_shards(c, rb, pod);
        else
            finish_from(c, rb, t);
        return;
    }
    const json_object *k = jsonx_find(JSONX_AT(job, "status", "conditions"), "type", "Failed");
    if (!k || !jsonx_str_is(k, "status", "True") || (t && jsonx_str_set(t, "message")))
        return;
    char why[PLAN_BACKUP_MESSAGE_MAX + 200];
    snprintf(why, sizeof(why), "Job %s failed: %s: %s", name, jsonx_str(k, "reason") ? jsonx_str(k, "reason") : "",
             jsonx_str(k, "message") ? jsonx_str(k, "message") : "");
    rb_failed(c, rb, why);
}

/* Unix seconds of the RFC 3339 time s, or 0 when s is not one. */
static int64_t seconds_of(const char *s)
{
    int64_t ns;
    return s && clock_parse_rfc3339(s, &ns) == 0 ? ns / NS_PER_S : 0;
}

/* A Running rb whose Job is not cached: right after START the cache may not have the Job
 * yet (its ADDED event is on the way), so it waits PLAN_BACKUP_JOB_GONE_S from startTime
 * (else its creation);
 * after that the Job was deleted (by a user, or with its pod) before its pod said
 * anything: Failed, so that the RedisBackup never stays Running for ever. */
static void backup_orphaned(const plan_ctx_t *c, const json_object *rb)
{
    int64_t now = c->now / NS_PER_S, started = seconds_of(JSONX_STR_AT(rb, "status", "startTime"));
    if (!started)
        started = seconds_of(JSONX_STR_AT(rb, "metadata", "creationTimestamp"));
    int64_t left = started ? started + PLAN_BACKUP_JOB_GONE_S - now : 0;
    if (left > 0) {
        plan_requeue_within(c->plan, left * NS_PER_S);
        return;
    }
    char why[400];
    snprintf(why, sizeof(why), "its Job %s is gone (deleted before its pod reported a result): create a new "
             "RedisBackup to back up again", JSONX_STR_AT(rb, "metadata", "name"));
    rb_failed(c, rb, why);
}

/* ---- SCHEDULE ------------------------------------------------------------------------ */

/* The schedule's RedisBackup named name for the cluster: its spec from spec.backup. */
static json_object *scheduled_backup(const plan_ctx_t *c, const char *name, int *oom)
{
    const rdc_spec_t *s = c->spec;
    json_object *o = jsonx_new_obj(oom), *m = jsonx_new_obj(oom), *l = jsonx_new_obj(oom);
    json_object *spec = jsonx_new_obj(oom);
    json_object *src = jsonx_new_obj(oom), *dest = jsonx_new_obj(oom), *cred = jsonx_new_obj(oom);
    jsonx_put(o, "apiVersion", jsonx_new_str(RENDER_GROUP_VERSION, oom), oom);
    jsonx_put(o, "kind", jsonx_new_str(RB_KIND, oom), oom);
    jsonx_put(m, "name", jsonx_new_str(name, oom), oom);
    jsonx_put(m, "namespace", jsonx_new_str(c->ns, oom), oom);
    jsonx_put(l, RENDER_LABEL_MANAGED_BY, jsonx_new_str(RENDER_FIELD_MANAGER, oom), oom);
    jsonx_put(l, RENDER_LABEL_BACKUP_CLUSTER, jsonx_new_str(c->name, oom), oom);
    jsonx_put(l, RENDER_LABEL_SCHEDULE, jsonx_new_str(c->name, oom), oom);
    jsonx_put(m, "labels", l, oom);
    jsonx_put(m, "ownerReferences", render_controller_refs(RENDER_KIND, c->name, c->uid, oom), oom);
    jsonx_put(o, "metadata", m, oom);
    jsonx_put(src, "cluster", jsonx_new_str(c->name, oom), oom);
    jsonx_put(spec, "source", src, oom);
    jsonx_put(dest, "endpoint", jsonx_new_str(s->backup.endpoint, oom), oom);
    jsonx_put(dest, "bucket", jsonx_new_str(s->backup.bucket, oom), oom);
    jsonx_put(dest, "prefix", jsonx_new_str(s->backup.prefix, oom), oom);
    if (s->backup.region)
        jsonx_put(dest, "region", jsonx_new_str(s->backup.region, oom), oom);
    jsonx_put(spec, "destination", dest, oom);
    jsonx_put(cred, "name", jsonx_new_str(s->backup.credentials_secret, oom), oom);
    jsonx_put(spec, "credentialsSecret", cred, oom);
    if (s->backup.ca_secret) {
        json_object *ca = jsonx_new_obj(oom);
        jsonx_put(ca, "name", jsonx_new_str(s->backup.ca_secret, oom), oom);
        jsonx_put(spec, "caSecret", ca, oom);
    }
    jsonx_put(o, "spec", spec, oom);
    return jsonx_done(o, *oom);
}

int plan_backup_schedule(const plan_ctx_t *c, char *last, size_t len)
{
    const char *was = JSONX_STR_AT(c->rc, "status", "backup", "lastScheduleTime");
    snprintf(last, len, "%s", was ? was : "");
    if (!c->spec->backup.schedule || !c->uid || !c->spec->backup.endpoint)
        return 0;
    int64_t now = c->now / NS_PER_S, scheduled = 0, next = -1;
    int64_t created = seconds_of(JSONX_STR_AT(c->rc, "metadata", "creationTimestamp"));
    int due = cron_due(&c->spec->backup.cron, seconds_of(was), created ? created : now, now, &scheduled, &next);
    if (next > now)
        plan_requeue_within(c->plan, (next - now) * NS_PER_S);
    if (!due)
        return 0;
    char name[80], stamp[16], why[200];
    struct tm tm;
    time_t t = (time_t)scheduled;
    gmtime_r(&t, &tm);
    strftime(stamp, sizeof(stamp), "%Y%m%d%H%M", &tm);
    snprintf(name, sizeof(name), "%.50s-%s", c->name, stamp);
    clock_format_rfc3339(scheduled * NS_PER_S, 0, last, len);
    if (jsonx_find_named(c->more ? c->more->backups : NULL, name) || plan_room(c->plan) < 2)
        return 0;
    snprintf(why, sizeof(why), "spec.backup.schedule \"%s\" fired at %s: RedisBackup %s", c->spec->backup.schedule,
             last, name);
    int i = plan_add_action(c->plan, PLAN_CREATE, RENDER_GROUP_VERSION, "redisbackups", c->ns, name,
                            scheduled_backup(c, name, plan_oom(c->plan)), why);
    if (i >= 0)
        plan_add_event(c->plan, "Normal", "BackupScheduled", i, "%s", why);
    return *plan_oom(c->plan) ? -1 : 0;
}

/* ---- RETENTION and the steps --------------------------------------------------------- */

/* RETENTION of the schedule's RedisBackups. */
static void backup_retention(const plan_ctx_t *c)
{
    const json_object *all = c->more->backups;
    backup_ref_t refs[PLAN_BACKUP_MAX];
    const json_object *objs[PLAN_BACKUP_MAX];
    size_t n = 0, del[PLAN_BACKUP_MAX];
    for (size_t i = 0; i < jsonx_len(all) && n < PLAN_BACKUP_MAX; i++) {
        const json_object *rb = json_object_array_get_idx(all, i), *meta = jsonx_get(rb, "metadata");
        const char *phase = JSONX_STR_AT(rb, "status", "phase");
        if (!jsonx_str_is(jsonx_get(meta, "labels"), RENDER_LABEL_SCHEDULE, c->name) ||
            jsonx_get(meta, "deletionTimestamp") || !jsonx_str_set(meta, "name"))
            continue;
        refs[n] = (backup_ref_t){jsonx_str(meta, "name"), seconds_of(jsonx_str(meta, "creationTimestamp")),
                                 unfinished(phase)              ? BACKUP_RUNNING
                                 : !strcmp(phase, "Succeeded") ? BACKUP_SUCCEEDED
                                                               : BACKUP_FAILED};
        objs[n++] = rb;
    }
    size_t k = retention_pick(refs, n, c->spec->backup.keep, PLAN_BACKUP_KEEP_FAILED, del);
    for (size_t i = 0; i < k && plan_room(c->plan) > 1; i++) {
        char why[300];
        snprintf(why, sizeof(why), "retention of spec.backup.schedule (keep %d): RedisBackup %s is older",
                 c->spec->backup.keep, refs[del[i]].name);
        plan_add_action(c->plan, PLAN_DELETE, RENDER_GROUP_VERSION, "redisbackups", c->ns, refs[del[i]].name,
                        plan_delete_options(JSONX_STR_AT(objs[del[i]], "metadata", "uid"), NULL, plan_oom(c->plan)),
                        why);
    }
}

int plan_backup_running(const plan_ctx_t *c)
{
    const json_object *all = c->more ? c->more->backups : NULL;
    for (size_t i = 0; i < jsonx_len(all); i++) {
        const json_object *rb = json_object_array_get_idx(all, i);
        const char *name = JSONX_STR_AT(rb, "metadata", "name"), *phase = JSONX_STR_AT(rb, "status", "phase");
        if (name && unfinished(phase) &&
            ((phase && !strcmp(phase, "Running")) || by_label(c->more->jobs, RENDER_LABEL_BACKUP, name)))
            return 1;
    }
    return 0;
}

int plan_backups(const plan_ctx_t *c)
{
    const json_object *all = c->more ? c->more->backups : NULL;
    take_names_t *names = NULL;
    for (size_t i = 0; i < jsonx_len(all) && plan_room(c->plan) > 3; i++) {
        const json_object *rb = json_object_array_get_idx(all, i);
        const char *name = JSONX_STR_AT(rb, "metadata", "name"), *phase = JSONX_STR_AT(rb, "status", "phase");
        if (!name || JSONX_AT(rb, "metadata", "deletionTimestamp") || !unfinished(phase))
            continue;
        const json_object *job = by_label(c->more->jobs, RENDER_LABEL_BACKUP, name);
        if (job)
            backup_finish(c, rb, job);
        else if ((!phase || strcmp(phase, "Running")) &&
                 (names || (names = calloc(RENDER_BACKUP_MAX_SHARDS, sizeof(*names)))))
            backup_start(c, rb, names);
        else if (!phase || strcmp(phase, "Running"))
            *plan_oom(c->plan) = 1;
        else
            backup_orphaned(c, rb);
    }
    free(names);
    if (all && c->spec->backup.schedule)
        backup_retention(c);
    return *plan_oom(c->plan) ? -1 : 0;
}
